package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/run"
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
					summarizer, closeSummarizer, err := run.NewSummarizer(c.String("summarizer-url"), c.String("summarizer-model"), c.String("summarizer-dialect"))
					if err != nil {
						return toolResult(err)
					}
					defer closeSummarizer()
					return visitHint(c.StringSlice("url"), c.StringSlice("allow-host"), tools.RunVisitCommand(c.Context, tools.VisitCommand{
						URLs: c.StringSlice("url"), Goal: c.String("goal"), AllowHosts: c.StringSlice("allow-host"),
						Backend: c.String("backend"), JinaURL: c.String("jina-url"), Budget: c.Int("budget"),
						MaxBytes: c.Int64("max-bytes"), MaxRedirects: c.Int("max-redirects"), Timeout: c.Duration("timeout"),
						Summarizer: summarizer,
					}, c.App.Writer))
				},
			},
			mcpToolCommand(),
		},
	}
}

// mcpToolCommand lists and calls the tools of the MCP servers of a run's
// configuration (tools.mcp), as the agents would see and call them.
func mcpToolCommand() *cli.Command {
	configFlag := &cli.PathFlag{Name: "config", Required: true, Usage: "the run's YAML `FILE` (its tools.mcp servers)"}
	load := func(c *cli.Context) (run.Config, error) {
		cfg, err := run.LoadConfig(c.Path("config"))
		if err != nil {
			return cfg, usageError{err}
		}
		return cfg, nil
	}
	return &cli.Command{
		Name:  "mcp",
		Usage: "the tools of the MCP servers of a configuration (tools.mcp)",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "start the servers and print every tool as the model would see it (name, description, parameters)",
				Flags: []cli.Flag{configFlag},
				Action: func(c *cli.Context) error {
					cfg, err := load(c)
					if err != nil {
						return err
					}
					return toolResult(run.MCPList(c.Context, cfg, c.App.Writer, loggerOf(c)))
				},
			},
			{
				Name:      "call",
				Usage:     "call one tool of one server and print the observation the model would see (exit 1 when it is an error observation)",
				ArgsUsage: "SERVER TOOL",
				Flags: []cli.Flag{&cli.PathFlag{Name: "config", Usage: configFlag.Usage},
					&cli.StringFlag{Name: "args", Value: "{}", Usage: "the arguments, a JSON object"},
					&cli.DurationFlag{Name: "timeout", Value: tools.DefaultCommandTimeout, Usage: "bound on starting the server and the call"},
				},
				Action: func(c *cli.Context) error {
					// The flags may follow SERVER TOOL, as the usage line
					// shows them; the CLI library parses only those before.
					rest := flag.NewFlagSet("tool mcp call", flag.ContinueOnError)
					rest.SetOutput(io.Discard)
					config := rest.String("config", c.Path("config"), "")
					args := rest.String("args", c.String("args"), "")
					timeout := rest.Duration("timeout", c.Duration("timeout"), "")
					pos := c.Args().Slice()
					if len(pos) < 2 {
						return usagef("tool mcp call: want SERVER TOOL, got %d arguments", len(pos))
					}
					if err := rest.Parse(pos[2:]); err != nil {
						return usagef("tool mcp call: %v", err)
					}
					if rest.NArg() > 0 {
						return usagef("tool mcp call: want SERVER TOOL, got also %q", rest.Args())
					}
					if *config == "" {
						return usagef("tool mcp call: --config FILE is required")
					}
					cfg, err := run.LoadConfig(*config)
					if err != nil {
						return usageError{err}
					}
					ctx, cancel := context.WithTimeout(c.Context, *timeout)
					defer cancel()
					return toolResult(run.MCPCall(ctx, cfg, pos[0], pos[1], *args, c.App.Writer, loggerOf(c)))
				},
			},
		},
	}
}

// toolResult maps a tool command's error to the exit status: an error
// observation (already printed) exits 1, anything else is a configuration
// error and exits 2.
// visitHint adds to a visit the SSRF guard refused how to let it through:
// the observation is what a model would see, so the flag is said here.
func visitHint(urls, allowed []string, err error) error {
	err = toolResult(err)
	if err == nil || !strings.Contains(err.Error(), "(refused)") {
		return err
	}
	var hosts []string
	for _, u := range urls {
		if p, perr := url.Parse(u); perr == nil && p.Host != "" && !slices.Contains(allowed, p.Host) && !slices.Contains(hosts, p.Host) {
			hosts = append(hosts, p.Host)
		}
	}
	if len(hosts) == 0 {
		return err
	}
	return fmt.Errorf("%w: the SSRF guard refuses loopback, private and link-local addresses; to open a host you trust (a local sim web, an intranet page) add --allow-host %s", err, strings.Join(hosts, " --allow-host "))
}

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
