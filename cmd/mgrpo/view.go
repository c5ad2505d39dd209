package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/bench/view"
	"github.com/mgrpo/mgrpo/internal/httpserve"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// viewShutdownGrace is how long open page requests get to finish once the
// command is interrupted.
const viewShutdownGrace = 5 * time.Second

// viewCommand serves the web page of a run directory.
func viewCommand() *cli.Command {
	return &cli.Command{
		Name:      "view",
		Usage:     "serve a local web page over a run directory: curves, queries and rollouts per step, rollout trees, token views",
		ArgsUsage: "[--listen ADDR] RUN_DIR",
		Description: "Reads RUN_DIR as mgrpo rollout --out RUN_DIR writes it, lazily, page by page, while the run may still\n" +
			"be going (steps being written show as in progress). Prints the page's URL and serves until interrupted.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", Usage: "`ADDR` to serve on (port 0 picks a free one)"},
			&cli.StringFlag{Name: "tokenizer", Value: "sim", Usage: "`NAME` of the tokenizer that decodes the token view: sim (the sim's, used on a sample only where its text matches what the run kept; other runs show the kept text) or none (the kept text)"},
			&cli.StringFlag{Name: "detokenize-url", Usage: "decode the token view with the /detokenize route of the engine at `URL` (vLLM or SGLang base URL) instead of --tokenizer"},
			&cli.StringFlag{Name: "detokenize-model", Usage: "served `MODEL` name to send with --detokenize-url"},
			&cli.StringFlag{Name: "detokenize-dialect", Value: "vllm", Usage: "`DIALECT` of --detokenize-url: vllm or sglang"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("view takes one run directory")
			}
			dir := c.Args().First()
			logger := loggerOf(c)
			opts := view.Options{Logger: logger}
			switch tk := c.String("tokenizer"); {
			case c.String("detokenize-url") != "":
				det, err := newEngineDetokenizer(c.String("detokenize-url"), c.String("detokenize-model"), c.String("detokenize-dialect"))
				if err != nil {
					return err
				}
				opts.Detokenizer = det
			case tk == "sim":
				opts.Detokenizer, opts.PerToken = simDetokenizer{simllm.NewTokenizer()}, true
			case tk == "none":
			default:
				return usagef("--tokenizer %q: want sim or none", tk)
			}
			h, err := view.NewWithOptions(dir, opts)
			if err != nil {
				return usagef("view: %w", err)
			}
			addr := c.String("listen")
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return usagef("--listen %s: %w", addr, err)
			}
			srv := viewServer(h, httpserve.Short())
			fmt.Fprintf(c.App.Writer, "view http://%s/\n", l.Addr())
			logger.Info("serving run", "dir", dir, "url", "http://"+l.Addr().String()+"/")
			return serveUntilDone(c.Context, srv, l)
		},
	}
}

// viewServer is the server of mgrpo view: its pages are short answers, so
// Short's limits (a minute to write a page, 1 MiB bodies though no route
// takes one) fit.
func viewServer(h http.Handler, limits httpserve.Limits) *http.Server { return limits.Server(h) }

// serveUntilDone serves on l until ctx ends, then shuts srv down, giving
// open requests viewShutdownGrace to finish.
func serveUntilDone(ctx context.Context, srv *http.Server, l net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), viewShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
