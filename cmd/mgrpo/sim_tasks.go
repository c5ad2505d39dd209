package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/run"
	"github.com/mgrpo/mgrpo/sim/web"
)

func simTasksCommand() *cli.Command {
	return &cli.Command{
		Name:  "tasks",
		Usage: "write the synthetic web's questions with their gold answers",
		Flags: []cli.Flag{
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "`SEED` of the web generator (the same as mgrpo sim --seed)"},
			&cli.IntFlag{Name: "sites", Value: web.DefaultSites, Usage: "`N` sites in the synthetic web (the same as mgrpo sim --sites)"},
			&cli.IntFlag{Name: "n", Value: 100, Usage: "number of questions"},
			&cli.StringFlag{Name: "out", Value: "-", Usage: "output `FILE` (- for standard output)"},
			&cli.StringFlag{Name: "format", Value: "jsonl", Usage: "jsonl (id, question, answer, metadata), gaia (metadata.jsonl layout) or webwalkerqa (hub layout)"},
		},
		Action: func(c *cli.Context) error {
			n := c.Int("n")
			if n < 1 {
				return usagef("--n %d: must be at least 1", n)
			}
			world, err := web.Generate(web.Config{Seed: c.Int64("seed"), Sites: c.Int("sites"), Questions: n})
			if errors.Is(err, web.ErrConfig) {
				return usageError{err}
			}
			if err != nil {
				return fmt.Errorf("generate web: %w", err)
			}
			qs := world.Questions
			if len(qs) > n {
				qs = qs[:n]
			}
			return run.WriteOut(c.String("out"), c.App.Writer, func(w io.Writer) error {
				if err := web.WriteTasks(w, qs, c.String("format")); err != nil {
					return usageError{err}
				}
				return nil
			})
		},
	}
}
