// Package sim starts the simulated world in-process: the vLLM/SGLang-shaped
// inference server of package sim/llm and the synthetic web of package
// sim/web, served on loopback. `mgrpo rollout --sim`, `mgrpo eval --sim` and
// tests use it to run the whole farm offline.
//
// Like its sub-packages, sim is an independent implementation of the wire
// formats: it imports none of the project's client packages.
package sim

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/mcptools"
	"github.com/mgrpo/mgrpo/sim/trainer"
	"github.com/mgrpo/mgrpo/sim/web"
)

// The fixed addresses of the simulated services. The web's URLs appear in
// prompts, so a run reproduces its samples byte for byte only on the same
// ports.
const (
	DefaultLLMAddr = "127.0.0.1:18000"
	DefaultWebAddr = "127.0.0.1:18001"
	// DefaultExecutorLLMAddr and DefaultTrainerAddr serve a training world
	// (Options.Training): the executors' own inference server and the
	// Tinker-shaped trainer.
	DefaultExecutorLLMAddr = "127.0.0.1:18002"
	DefaultTrainerAddr     = "127.0.0.1:18003"
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
	// Training starts a world a training loop can learn in: the planner and
	// the executors get inference servers of their own (distinct models
	// with their own weight versions, as in production), and a sim trainer
	// (package sim/trainer) trains the policy's parameters and saves them
	// under CheckpointDir, where both inference servers load them from on a
	// weight update.
	Training bool
	// CheckpointDir holds the trainer's saved weights and its models'
	// state (required with Training): a world started again on the same
	// directory trains the same models on (trainer.Config.Persist).
	CheckpointDir string
	// TrainerStepTime is how long the trainer's optimizer step takes
	// (trainer.Config.StepTime).
	TrainerStepTime time.Duration
	// StripReasoning makes the inference servers' chat template drop
	// earlier turns' reasoning, as Qwen3's does (see simllm.Config).
	StripReasoning bool
	// Template holds the inference servers' other template behaviours and
	// reasoning fields (simllm.Config's MergeToolResults, CanonicalToolArgs,
	// TrimContent, ReasoningContent, StrictReasoningInput), StripReasoning
	// aside; DisabledRoutes the route families they lack, as
	// simllm.ParseRouteFamilies reads them ("render,generate", "all").
	Template       TemplateOptions
	DisabledRoutes string
	// RecordGenerations makes the inference servers log every sampled
	// sequence (World.Generations), for tests that check training data
	// against what the engine sampled.
	RecordGenerations bool
	// LogprobsMode is the vLLM dialect's --logprobs-mode of the inference
	// servers (simllm.Config.LogprobsMode; empty: raw_logprobs).
	LogprobsMode string
	// TrainerTemperature is the sampling temperature the sim trainer
	// divides its logits by when it scores (trainer.SimPolicy's
	// WithTemperature; 0: 1).
	TrainerTemperature float64
	// Faults are the inference servers' injected failures (none by
	// default).
	Faults simllm.Faults
	// KeptVersions is how many weight versions the inference servers keep
	// for requests pinned to one (simllm.Config.KeptVersions; 0: its
	// default).
	KeptVersions int
}

// World is a running simulated world.
type World struct {
	// LLMURL is the inference server's base URL (without /v1), WebURL the
	// synthetic web's, WebHost the web's host:port (for an SSRF
	// allow-list).
	LLMURL, WebURL, WebHost string
	// ExecutorLLMURL is the executors' inference server: LLMURL, except in
	// a training world. TrainerURL is the sim trainer's base URL (its
	// Tinker routes are under /api/v1), empty outside a training world.
	ExecutorLLMURL, TrainerURL string
	// Web is the generated web, with its questions and gold answers.
	Web *web.World
	// MCPURL is the world's MCP server (package sim/mcptools), served by
	// the web at mcptools.Path.
	MCPURL string

	llm     []*simllm.Server
	trainer *trainer.Server
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
	if opts.Training && opts.CheckpointDir == "" {
		return nil, errors.New("sim: a training world needs a checkpoint directory")
	}
	cfg := simllm.DefaultConfig()
	cfg.Seed, cfg.Logger, cfg.Slots, cfg.CheckpointDir, cfg.StripReasoning = opts.Seed, logger, DefaultSlots, opts.CheckpointDir, opts.StripReasoning
	cfg.Faults, cfg.KeptVersions = opts.Faults, opts.KeptVersions
	opts.Template.apply(&cfg)
	cfg.RecordGenerations = opts.RecordGenerations
	if cfg.Disabled, err = simllm.ParseRouteFamilies(opts.DisabledRoutes); err != nil {
		return nil, fmt.Errorf("sim: disabled routes: %w", err)
	}
	if opts.Dialect != "" {
		cfg.Dialect = opts.Dialect
	}
	cfg.LogprobsMode = opts.LogprobsMode
	if opts.Slots > 0 {
		cfg.Slots = opts.Slots
	}
	world := &World{Web: w}
	defer func() {
		if world.servers == nil {
			world.closeServers()
		}
	}()
	addLLM := func(name, addr string) (Service, error) {
		srv, err := simllm.NewServer(cfg)
		if err != nil {
			return Service{}, fmt.Errorf("sim inference server: %w", err)
		}
		world.llm = append(world.llm, srv)
		return Service{Name: name, Addr: addr, Handler: srv.Handler()}, nil
	}
	llm, err := addLLM("llm", DefaultLLMAddr)
	if err != nil {
		return nil, err
	}
	services := []Service{llm, {Name: "web", Addr: DefaultWebAddr, Handler: WebHandler(w, logger)}}
	if opts.Training {
		exec, err := addLLM("executor llm", DefaultExecutorLLMAddr)
		if err != nil {
			return nil, err
		}
		world.trainer, err = trainer.Open(trainer.Config{Policy: trainer.NewSimPolicy(cfg, w).WithTemperature(opts.TrainerTemperature), BaseModels: []string{cmp.Or(cfg.Model, simllm.DefaultModel)},
			CheckpointDir: opts.CheckpointDir, Persist: true, Seed: opts.Seed, Logger: logger, StepTime: opts.TrainerStepTime})
		if err != nil {
			return nil, err
		}
		services = append(services, exec, Service{Name: "trainer", Addr: DefaultTrainerAddr, Handler: world.trainer.Handler()})
	}
	s, err := Listen(services)
	var le *ListenError
	if errors.As(err, &le) {
		logger.Warn("sim ports taken; using free ports, so samples will not match a run on the usual ports",
			"llm", DefaultLLMAddr, "web", DefaultWebAddr, "err", err)
		for i := range services {
			services[i].Addr = "127.0.0.1:0"
		}
		s, err = Listen(services)
	}
	if err != nil {
		return nil, fmt.Errorf("start sim world: %w", err)
	}
	u, err := url.Parse(s.URLs[1])
	if err != nil {
		s.Stop(0)
		return nil, fmt.Errorf("start sim world: %w", err)
	}
	world.LLMURL, world.WebURL, world.WebHost, world.ExecutorLLMURL = s.URLs[0], s.URLs[1], u.Host, s.URLs[0]
	world.MCPURL = s.URLs[1] + mcptools.Path
	if opts.Training {
		world.ExecutorLLMURL, world.TrainerURL = s.URLs[2], s.URLs[3]
	}
	world.servers = s
	return world, nil
}

// closeServers closes the inference servers and the trainer.
func (w *World) closeServers() {
	for _, srv := range w.llm {
		srv.Close()
	}
	if w.trainer != nil {
		w.trainer.Close()
	}
}

// Close stops the servers at once: the run using them is over, so nothing
// is waited for. It is idempotent.
func (w *World) Close() {
	w.servers.Stop(0)
	w.closeServers()
}

// WebHandler serves the synthetic web w and, at mcptools.Path, the world's
// MCP server over it (a calculator and a notes store of the web's facts).
func WebHandler(w *web.World, logger *slog.Logger, opts ...web.HandlerOption) http.Handler {
	pages, tools := w.Handler(opts...), mcptools.Handler(w, logger)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == mcptools.Path {
			tools.ServeHTTP(rw, r)
			return
		}
		pages.ServeHTTP(rw, r)
	})
}

// Sabotaged returns the generation requests the world's inference servers
// broke on purpose (their Faults), the planner's server first.
func (w *World) Sabotaged() []simllm.Sabotage {
	var out []simllm.Sabotage
	for _, s := range w.llm {
		out = append(out, s.Sabotaged()...)
	}
	return out
}

// TemplateOptions are template behaviours of real models the inference
// servers copy (see simllm.Template and simllm.Config).
type TemplateOptions struct {
	StripReasoningBeforeLastQuery                    bool
	MergeToolResults, CanonicalToolArgs, TrimContent bool
	ReasoningContent, StrictReasoningInput           bool
}

func (t TemplateOptions) apply(cfg *simllm.Config) {
	cfg.StripReasoningBeforeLastQuery = t.StripReasoningBeforeLastQuery
	cfg.MergeToolResults, cfg.CanonicalToolArgs, cfg.TrimContent = t.MergeToolResults, t.CanonicalToolArgs, t.TrimContent
	cfg.ReasoningContent, cfg.StrictReasoningInput = t.ReasoningContent, t.StrictReasoningInput
}

// Generations returns the inference servers' generation logs (the
// planner's server first in a training world), empty unless
// Options.RecordGenerations was set.
func (w *World) Generations() []simllm.Generation {
	var out []simllm.Generation
	for _, s := range w.llm {
		out = append(out, s.Generations()...)
	}
	return out
}
