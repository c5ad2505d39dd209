package main

import (
	"fmt"
	"log/slog"
	"net/url"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/web"
)

// simWorld is the simulated world started in-process by `mgrpo rollout
// --sim`: an inference server and a synthetic web on loopback ports.
type simWorld struct {
	llmURL  string // base URL of the inference server
	webURL  string // base URL of the synthetic web
	webHost string // host:port of the web, for the SSRF allow-list
	world   *web.World
	srv     *simllm.Server
	servers *servers
}

// startSimWorld generates the web from seed and serves both services on
// 127.0.0.1 ports chosen by the system.
func startSimWorld(seed uint64, dialect string, logger *slog.Logger) (*simWorld, error) {
	world, err := web.Generate(web.Config{Seed: int64(seed)})
	if err != nil {
		return nil, fmt.Errorf("sim web: %w", err)
	}
	cfg := simllm.DefaultConfig()
	cfg.Dialect, cfg.Seed, cfg.Logger = dialect, seed, logger
	// A run sends many concurrent rollouts; the engine should not be the
	// bottleneck of a laptop demo.
	cfg.Slots = 1024
	srv, err := simllm.NewServer(cfg)
	if err != nil {
		return nil, fmt.Errorf("sim inference server: %w", err)
	}
	// The web's URLs appear in prompts, so they must not change between
	// runs for a seed to reproduce its samples byte for byte: use the fixed
	// `mgrpo sim` ports when they are free.
	handlers := []namedHandler{
		{name: "llm", addr: defaultSimLLMAddr, handler: srv.Handler()},
		{name: "web", addr: defaultSimWebAddr, handler: world.Handler()},
	}
	s, err := startServers(handlers)
	if err != nil {
		logger.Warn("sim ports taken; using free ports, so samples will not match a run on the usual ports",
			"llm", defaultSimLLMAddr, "web", defaultSimWebAddr, "err", err)
		handlers[0].addr, handlers[1].addr = "127.0.0.1:0", "127.0.0.1:0"
		if s, err = startServers(handlers); err != nil {
			srv.Close()
			return nil, err
		}
	}
	u, _ := url.Parse(s.urls[1])
	return &simWorld{llmURL: s.urls[0], webURL: s.urls[1], webHost: u.Host, world: world, srv: srv, servers: s}, nil
}

// close stops the servers; the run using them is over, so nothing is
// waited for.
func (w *simWorld) close() {
	w.srv.Close()
	w.servers.stop(0)
}
