package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/tools/corpus"
)

// corpusCommand builds and serves local search corpora.
func corpusCommand() *cli.Command {
	return &cli.Command{
		Name:  "corpus",
		Usage: "build and serve a local full-text corpus (Search-R1 compatible)",
		Subcommands: []*cli.Command{
			{
				Name: "index",
				Usage: "build a bleve index from JSONL ({id, contents} as Search-R1's wiki-18, or {id|url, title, text}); " +
					"an interrupted build resumes when run again",
				Flags: []cli.Flag{
					&cli.PathFlag{Name: "in", Required: true, Usage: "input JSONL `FILE`"},
					&cli.PathFlag{Name: "out", Required: true, Usage: "index `DIR`"},
					&cli.IntFlag{Name: "batch-size", Value: 2000, Usage: "documents per index batch"},
					&cli.BoolFlag{Name: "restart", Usage: "discard a partial index and build from scratch"},
				},
				Action: func(c *cli.Context) error {
					return corpus.RunIndexCommand(c.Context, corpus.IndexCommand{
						In: c.Path("in"), Out: c.Path("out"), BatchSize: c.Int("batch-size"), Restart: c.Bool("restart"),
					}, consoleOf(c))
				},
			},
			{
				Name:  "serve",
				Usage: "serve the Search-R1 /retrieve API over an index",
				Flags: []cli.Flag{
					&cli.PathFlag{Name: "index", Required: true, Usage: "index `DIR`"},
					&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8000", Usage: "address to listen on"},
					&cli.IntFlag{Name: "topk", Value: 3, Usage: "hits per query when the request gives no topk"},
				},
				Action: func(c *cli.Context) error {
					return corpus.Serve(c.Context, corpus.ServeConfig{
						Index: c.Path("index"), Listen: c.String("listen"), TopK: c.Int("topk"), Logger: loggerOf(c),
						Ready: func(addr string) { fmt.Fprintf(c.App.Writer, "retriever http://%s/retrieve\n", addr) },
					})
				},
			},
		},
	}
}
