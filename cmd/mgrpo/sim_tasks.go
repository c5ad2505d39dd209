package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

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
			return writeOut(c.String("out"), c.App.Writer, func(w io.Writer) error {
				if err := web.WriteTasks(w, qs, c.String("format")); err != nil {
					return usageError{err}
				}
				return nil
			})
		},
	}
}

// writeOut runs write on path ("-" is stdout), buffered, and reports errors
// of the final flush and close too.
func writeOut(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		bw := bufio.NewWriter(stdout)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	f, err := os.Create(path)
	if err != nil {
		return usagef("--out: %w", err)
	}
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}
