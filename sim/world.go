// Package sim starts the simulated world in-process: the vLLM/SGLang-shaped
// inference server of package sim/llm and the synthetic web of package
// sim/web, served on loopback. `mgrpo rollout --sim`, `mgrpo eval --sim` and
// tests use it to run the whole farm offline.
//
// Like its sub-packages, sim is an independent implementation of the wire
// formats: it imports none of the project's client packages.
package sim

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/web"
)

// The fixed addresses of the simulated services. The web's URLs appear in
// prompts, so a run reproduces its samples byte for byte only on the same
// ports.
const (
	DefaultLLMAddr = "127.0.0.1:18000"
	DefaultWebAddr = "127.0.0.1:18001"
)

// DefaultSlots is how many sequences the in-process inference server
// generates at once: a run sends many concurrent rollouts, and the engine
// should not be the bottleneck of a laptop demo.
const DefaultSlots = 1024

// Options configure Start.
type Options struct {
	// Seed drives the web generator and the policy's sampling.
	Seed uint64
	// Dialect is the inference server's dialect: "vllm" (the default when
	// empty) or "sglang".
	Dialect string
	// Slots overrides DefaultSlots when positive.
	Slots int
	// Logger receives the servers' log lines (nil: discard).
	Logger *slog.Logger
}

// World is a running simulated world.
type World struct {
	// LLMURL is the inference server's base URL (without /v1), WebURL the
	// synthetic web's, WebHost the web's host:port (for an SSRF
	// allow-list).
	LLMURL, WebURL, WebHost string
	// Web is the generated web, with its questions and gold answers.
	Web *web.World

	llm     *simllm.Server
	servers *Servers
}

// Start generates the web from opts.Seed and serves both services on the
// fixed addresses (DefaultLLMAddr, DefaultWebAddr) when they are free, and
// on free loopback ports otherwise, with a warning: samples then differ from
// a run on the usual ports. Close stops it.
func Start(opts Options) (*World, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w, err := web.Generate(web.Config{Seed: int64(opts.Seed)})
	if err != nil {
		return nil, fmt.Errorf("sim web: %w", err)
	}
	cfg := simllm.DefaultConfig()
	cfg.Seed, cfg.Logger, cfg.Slots = opts.Seed, logger, DefaultSlots
	if opts.Dialect != "" {
		cfg.Dialect = opts.Dialect
	}
	if opts.Slots > 0 {
		cfg.Slots = opts.Slots
	}
	srv, err := simllm.NewServer(cfg)
	if err != nil {
		return nil, fmt.Errorf("sim inference server: %w", err)
	}
	services := []Service{
		{Name: "llm", Addr: DefaultLLMAddr, Handler: srv.Handler()},
		{Name: "web", Addr: DefaultWebAddr, Handler: w.Handler()},
	}
	s, err := Listen(services)
	var le *ListenError
	if errors.As(err, &le) {
		logger.Warn("sim ports taken; using free ports, so samples will not match a run on the usual ports",
			"llm", DefaultLLMAddr, "web", DefaultWebAddr, "err", err)
		services[0].Addr, services[1].Addr = "127.0.0.1:0", "127.0.0.1:0"
		s, err = Listen(services)
	}
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("start sim world: %w", err)
	}
	u, err := url.Parse(s.URLs[1])
	if err != nil {
		s.Stop(0)
		srv.Close()
		return nil, fmt.Errorf("start sim world: %w", err)
	}
	return &World{LLMURL: s.URLs[0], WebURL: s.URLs[1], WebHost: u.Host, Web: w, llm: srv, servers: s}, nil
}

// Close stops the servers at once: the run using them is over, so nothing
// is waited for. It is idempotent.
func (w *World) Close() {
	w.servers.Stop(0)
	w.llm.Close()
}
