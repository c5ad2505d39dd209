package main

import (
	"errors"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/tools"
	"github.com/mgrpo/mgrpo/tools/search"
)

// toolCommand calls one tool from the command line, as an agent would, to
// debug a provider or fetch configuration.
func toolCommand() *cli.Command {
	return &cli.Command{
		Name:  "tool",
		Usage: "call one tool and print the observation the model would see (exit 1 when it is an error observation)",
		Subcommands: []*cli.Command{
			{
				Name:  "search",
				Usage: "run the search tool; API keys come from " + strings.Join(searchKeyEnvs(), ", "),
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "provider", Required: true, Usage: search.NameList()},
					&cli.StringFlag{Name: "search-url", Usage: "provider base URL override"},
					&cli.StringFlag{Name: "index", Usage: "index directory of the local provider"},
					&cli.StringSliceFlag{Name: "query", Required: true, Usage: "a query (repeat for several)"},
					&cli.IntFlag{Name: "results", Value: 10, Usage: "results per query"},
					&cli.DurationFlag{Name: "timeout", Value: tools.DefaultCommandTimeout, Usage: "bound on the call"},
				},
				Action: func(c *cli.Context) error {
					return toolResult(tools.RunSearchCommand(c.Context, tools.SearchCommand{
						Provider: c.String("provider"), SearchURL: c.String("search-url"), Index: c.String("index"),
						Queries: c.StringSlice("query"), Results: c.Int("results"), Timeout: c.Duration("timeout"),
					}, c.App.Writer))
				},
			},
			{
				Name:  "visit",
				Usage: "run the visit tool; JINA_API_KEY is read for the jina backend",
				Flags: []cli.Flag{
					&cli.StringSliceFlag{Name: "url", Required: true, Usage: "a URL (repeat for several)"},
					&cli.StringFlag{Name: "goal", Usage: "what to look for on the pages"},
					&cli.StringSliceFlag{Name: "allow-host", Usage: "open HOST[:PORT] despite the SSRF guard (repeat)"},
					&cli.StringFlag{Name: "backend", Value: "direct", Usage: "direct or jina"},
					&cli.StringFlag{Name: "jina-url", Usage: "Jina Reader base URL override"},
					&cli.IntFlag{Name: "budget", Value: 30000, Usage: "observation size in characters"},
					&cli.Int64Flag{Name: "max-bytes", Usage: "cap on the bytes read per page (default 5 MiB)"},
					&cli.IntFlag{Name: "max-redirects", Value: 5, Usage: "redirects followed"},
					&cli.DurationFlag{Name: "timeout", Value: tools.DefaultCommandTimeout, Usage: "bound on the call"},
					&cli.StringFlag{Name: "summarizer-url", Usage: "OpenAI-compatible base URL of a summarizer model for goal-directed extraction"},
					&cli.StringFlag{Name: "summarizer-model", Usage: "summarizer model name"},
					&cli.StringFlag{Name: "summarizer-dialect", Value: "openai", Usage: "openai, vllm or sglang"},
				},
				Action: func(c *cli.Context) error {
					return toolResult(tools.RunVisitCommand(c.Context, tools.VisitCommand{
						URLs: c.StringSlice("url"), Goal: c.String("goal"), AllowHosts: c.StringSlice("allow-host"),
						Backend: c.String("backend"), JinaURL: c.String("jina-url"), Budget: c.Int("budget"),
						MaxBytes: c.Int64("max-bytes"), MaxRedirects: c.Int("max-redirects"), Timeout: c.Duration("timeout"),
						SummarizerURL: c.String("summarizer-url"), SummarizerModel: c.String("summarizer-model"),
						SummarizerDialect: c.String("summarizer-dialect"),
					}, c.App.Writer))
				},
			},
		},
	}
}

// toolResult maps a tool command's error to the exit status: an error
// observation (already printed) exits 1, anything else is a configuration
// error and exits 2.
func toolResult(err error) error {
	if err == nil || errors.Is(err, tools.ErrToolFailed) {
		return err
	}
	return usageError{err}
}

// searchKeyEnvs lists the environment variables of the search providers
// that need an API key.
func searchKeyEnvs() []string {
	var envs []string
	for _, name := range search.Names() {
		if env := search.KeyEnv(name); env != "" {
			envs = append(envs, env)
		}
	}
	return envs
}
