package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/sim"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/llm/policy"
	simtrainer "github.com/mgrpo/mgrpo/sim/trainer"
	"github.com/mgrpo/mgrpo/sim/web"
)

func simCommand() *cli.Command {
	return &cli.Command{
		Name:  "sim",
		Usage: "serve the simulated world: a vLLM/SGLang-shaped inference server and a synthetic web",
		Description: "Serves what is asked for (--llm, --web; both on default addresses when neither is given),\n" +
			"prints one line per service with its base URL, and runs until interrupted.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "llm", Usage: "serve the inference server on `ADDR` (host:port; port 0 picks one)"},
			&cli.StringFlag{Name: "web", Usage: "serve the synthetic web on `ADDR` (host:port; port 0 picks one)"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "seed of the web generator, the policy's sampling and fault injection"},
			&cli.IntFlag{Name: "sites", Value: web.DefaultSites, Usage: "`N` sites in the synthetic web (give the same --sites to mgrpo sim tasks)"},
			&cli.StringFlag{Name: "dialect", Value: simllm.DialectVLLM, Usage: "vllm or sglang"},
			&cli.StringFlag{Name: "model", Value: simllm.DefaultModel, Usage: "served model name"},
			&cli.IntFlag{Name: "max-model-len", Value: simllm.DefaultMaxModelLen, Usage: "context limit in tokens"},
			&cli.IntFlag{Name: "slots", Value: simllm.DefaultSlots, Usage: "sequences generated concurrently; more wait in a queue"},
			&cli.DurationFlag{Name: "ttft", Usage: "time to first token"},
			&cli.DurationFlag{Name: "per-token", Usage: "time per further output token"},
			&cli.Float64Flag{Name: "fault-500", Usage: "rate of injected 500 responses"},
			&cli.Float64Flag{Name: "fault-503", Usage: "rate of injected 503 responses"},
			&cli.Float64Flag{Name: "fault-429", Usage: "rate of injected 429 responses with Retry-After"},
			&cli.Float64Flag{Name: "fault-drop", Usage: "rate of connections dropped mid-response"},
			&cli.Float64Flag{Name: "fault-malformed", Usage: "rate of malformed JSON bodies"},
			&cli.Float64Flag{Name: "fault-stall", Usage: "rate of stalled requests"},
			&cli.Float64Flag{Name: "fault-stall-stream", Usage: "rate of streams that stop mid-way (after --stream-stall-after events; unstreamed requests it hits stall)"},
			&cli.DurationFlag{Name: "fault-endpoint-death", Usage: "the inference server stops answering (503 to every generation request) for `DURATION` after every --fault-death-every requests: a restart or a lost node, outlasting the clients' retries"},
			&cli.IntFlag{Name: "fault-death-every", Value: 200, Usage: "with --fault-endpoint-death: `N` generation requests between deaths"},
			&cli.IntFlag{Name: "stream-stall-after", Value: simllm.DefaultStreamStallAfter, Usage: "events a stalled stream sends before it stops"},
			&cli.DurationFlag{Name: "retry-after", Value: time.Second, Usage: "Retry-After of injected 429s"},
			&cli.DurationFlag{Name: "stall", Usage: "how long a stall lasts (0: until the client gives up)"},
			&cli.BoolFlag{Name: "tool-call-parser", Value: true, Usage: "return tool calls as message.tool_calls (false: raw <tool_call> text in content)"},
			&cli.BoolFlag{Name: "reasoning-parser", Value: true, Usage: "return <think> text as reasoning_content (false: it stays in content)"},
			&cli.StringFlag{Name: "logprobs-mode", Usage: "the vllm dialect's --logprobs-mode: raw_logprobs (before temperature and top-k/top-p/min-p; the default, as vLLM's) or processed_logprobs (the distribution sampled from); the sglang dialect reports tempered, unfiltered logprobs and takes none"},
			&cli.BoolFlag{Name: "strip-reasoning", Usage: "chat template drops <think> blocks of earlier assistant turns (breaks the prompt prefix, as Qwen3's does)"},
			&cli.BoolFlag{Name: "strip-reasoning-before-last-query", Usage: "chat template drops <think> blocks only of assistant turns before the last user message, Qwen3's own rule (the prefix breaks at each new user message)"},
			&cli.BoolFlag{Name: "merge-tool-results", Usage: "chat template merges consecutive tool results into one user turn of <tool_response> blocks, as Qwen3's does"},
			&cli.BoolFlag{Name: "canonical-tool-args", Usage: "chat template re-serializes earlier tool calls' arguments as canonical JSON (sorted keys, Python's separators), as templates printing them with tojson do"},
			&cli.BoolFlag{Name: "trim-content", Usage: "chat template trims whitespace around every message's content"},
			&cli.BoolFlag{Name: "reasoning-content", Usage: "the vllm dialect answers reasoning in reasoning_content, as older vLLM did (default: reasoning, as current vLLM)"},
			&cli.BoolFlag{Name: "strict-reasoning-input", Usage: "read an assistant message's reasoning only from the field the server's version writes (reasoning on current vLLM, reasoning_content on older vLLM and SGLang); reasoning in the other field is dropped from the prompt"},
			&cli.StringFlag{Name: "disable-routes", Usage: "turn route families off (they answer 404), comma-separated `LIST` of render, generate, derender, tokenize, token-prompt (a token-id prompt gets 400), or all: an older or token-less server"},
			&cli.BoolFlag{Name: "record-generations", Usage: "log every sampled sequence (prompt ids, ids, logprobs) and serve the log at GET /sim/generations, for tests (it grows without bound)"},
			&cli.BoolFlag{Name: "strict", Usage: "reject unknown request fields with 400 (real servers ignore them)"},
			&cli.StringFlag{Name: "weight-version", Value: simllm.DefaultWeightVersion, Usage: "initial served weight version"},
			&cli.PathFlag{Name: "skills", Usage: "JSON `FILE` overriding policy skills (field names as in sim/llm/policy.Skills)"},
			&cli.StringFlag{Name: "trainer", Usage: "also serve the Tinker-shaped sim trainer on `ADDR` (train with --planner-trainer tinker+http://ADDR --base-model-planner MODEL)"},
			&cli.PathFlag{Name: "checkpoint-dir", Value: "sim-checkpoints", Usage: "`DIR` where the sim trainer saves weights and its models' state (restored when it starts again) and the inference server loads tinker://MODEL/sampler_weights/NAME from"},
			&cli.PathFlag{Name: "params", Usage: "policy parameters `FILE` the inference server starts with (a file the sim trainer saved; default: the skills' parameters)"},
			&cli.DurationFlag{Name: "trainer-step-time", Usage: "how long each of the sim trainer's optimizer steps takes, as a GPU step would"},
			&cli.Float64Flag{Name: "trainer-fault-500", Usage: "rate of the sim trainer's injected 500 responses"},
			&cli.Float64Flag{Name: "trainer-fault-503", Usage: "rate of the sim trainer's injected 503 responses"},
			&cli.Float64Flag{Name: "trainer-fault-429", Usage: "rate of the sim trainer's injected 429 responses with Retry-After"},
			&cli.Float64Flag{Name: "trainer-fault-drop", Usage: "rate of the sim trainer's connections dropped mid-answer (the request took effect)"},
			&cli.StringFlag{Name: "search-api-key", EnvVars: []string{"MGRPO_SIM_SEARCH_API_KEY"}, Usage: "require this X-API-KEY on the web's Serper-shaped search"},
		},
		Action: func(c *cli.Context) error {
			llmAddr, webAddr := c.String("llm"), c.String("web")
			if llmAddr == "" && webAddr == "" {
				llmAddr, webAddr = sim.DefaultLLMAddr, sim.DefaultWebAddr
			}
			cfg, err := simLLMConfig(c)
			if err != nil {
				return usageError{err}
			}
			var handlers []namedHandler
			if addr := c.String("trainer"); addr != "" {
				world, err := web.Generate(web.Config{Seed: c.Int64("seed"), Sites: c.Int("sites")})
				if err != nil {
					return usageError{fmt.Errorf("generate web: %w", err)}
				}
				tr, err := simtrainer.Open(simtrainer.Config{Policy: simtrainer.NewSimPolicy(cfg, world), BaseModels: []string{cfg.Model},
					CheckpointDir: cfg.CheckpointDir, Persist: true, Seed: cfg.Seed, Logger: loggerOf(c), StepTime: c.Duration("trainer-step-time"), Faults: simtrainer.Faults{
						Rate500: c.Float64("trainer-fault-500"), Rate503: c.Float64("trainer-fault-503"),
						Rate429: c.Float64("trainer-fault-429"), RateDrop: c.Float64("trainer-fault-drop")}})
				if err != nil {
					return fmt.Errorf("sim trainer: %w", err)
				}
				defer tr.Close()
				handlers = append(handlers, namedHandler{Service: sim.Service{Name: "trainer", Addr: addr, Handler: tr.Handler()}})
			}
			if llmAddr != "" {
				srv, err := simllm.NewServer(cfg)
				if err != nil {
					return usageError{fmt.Errorf("inference server: %w", err)}
				}
				defer srv.Close()
				handlers = append(handlers, namedHandler{Service: sim.Service{Name: "llm", Addr: llmAddr, Handler: srv.Handler()}, suffix: "/v1"})
			}
			if webAddr != "" {
				world, err := web.Generate(web.Config{Seed: c.Int64("seed"), Sites: c.Int("sites")})
				if errors.Is(err, web.ErrConfig) {
					return usageError{err}
				}
				if err != nil {
					return fmt.Errorf("generate web: %w", err)
				}
				var opts []web.HandlerOption
				if key := c.String("search-api-key"); key != "" {
					opts = append(opts, web.WithAPIKey(key))
				}
				handlers = append(handlers, namedHandler{Service: sim.Service{Name: "web", Addr: webAddr, Handler: sim.WebHandler(world, loggerOf(c), opts...)}})
			}
			return serve(c.Context, loggerOf(c), c.App.Writer, handlers)
		},
		Subcommands: []*cli.Command{simTasksCommand()},
	}
}

// simLLMConfig turns the sim flags into the inference server's
// configuration and validates it, so a bad flag stops before anything runs.
func simLLMConfig(c *cli.Context) (simllm.Config, error) {
	cfg := simllm.DefaultConfig()
	cfg.Dialect = c.String("dialect")
	cfg.Model = c.String("model")
	cfg.Seed = uint64(c.Int64("seed"))
	cfg.MaxModelLen = c.Int("max-model-len")
	cfg.Slots = c.Int("slots")
	cfg.TTFT = c.Duration("ttft")
	cfg.PerToken = c.Duration("per-token")
	cfg.Faults = simllm.Faults{
		Rate500:          c.Float64("fault-500"),
		Rate503:          c.Float64("fault-503"),
		Rate429:          c.Float64("fault-429"),
		RateDrop:         c.Float64("fault-drop"),
		RateMalformed:    c.Float64("fault-malformed"),
		RateStall:        c.Float64("fault-stall"),
		RateStallStream:  c.Float64("fault-stall-stream"),
		DeathFor:         c.Duration("fault-endpoint-death"),
		StreamStallAfter: c.Int("stream-stall-after"),
		RetryAfter:       c.Duration("retry-after"),
		StallDuration:    c.Duration("stall"),
	}
	if cfg.Faults.DeathFor > 0 {
		cfg.Faults.DeathEvery = c.Int("fault-death-every")
	}
	cfg.ToolCallParser = c.Bool("tool-call-parser")
	cfg.ReasoningParser = c.Bool("reasoning-parser")
	cfg.StripReasoning = c.Bool("strip-reasoning")
	cfg.StripReasoningBeforeLastQuery = c.Bool("strip-reasoning-before-last-query")
	cfg.MergeToolResults = c.Bool("merge-tool-results")
	cfg.CanonicalToolArgs = c.Bool("canonical-tool-args")
	cfg.TrimContent = c.Bool("trim-content")
	cfg.ReasoningContent = c.Bool("reasoning-content")
	cfg.StrictReasoningInput = c.Bool("strict-reasoning-input")
	off, err := simllm.ParseRouteFamilies(c.String("disable-routes"))
	if err != nil {
		return cfg, fmt.Errorf("--disable-routes: %w", err)
	}
	cfg.Disabled = off
	cfg.RecordGenerations = c.Bool("record-generations")
	cfg.LogprobsMode = c.String("logprobs-mode")
	cfg.Strict = c.Bool("strict")
	cfg.WeightVersion = c.String("weight-version")
	cfg.CheckpointDir = c.Path("checkpoint-dir")
	cfg.Logger = loggerOf(c)
	if path := c.Path("params"); path != "" {
		params, err := policy.ReadParams(path)
		if err != nil {
			return cfg, fmt.Errorf("--params: %w", err)
		}
		cfg.Params = params
	}
	if path := c.Path("skills"); path != "" {
		skills, err := readSkills(path)
		if err != nil {
			return cfg, err
		}
		cfg.Skills = skills
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("sim flags: %w", err)
	}
	return cfg, nil
}

// readSkills overlays a JSON file on the default skills; unknown fields are
// an error so a typo does not silently leave a default in place.
func readSkills(path string) (policy.Skills, error) {
	skills := policy.DefaultSkills()
	data, err := os.ReadFile(path)
	if err != nil {
		return skills, fmt.Errorf("--skills: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&skills); err != nil {
		return skills, fmt.Errorf("--skills %s: %w (fields are those of sim/llm/policy.Skills, e.g. {\"Sloppiness\": 0.2})", path, err)
	}
	if err := skills.Validate(); err != nil {
		return skills, fmt.Errorf("--skills %s: %w", path, err)
	}
	return skills, nil
}

// namedHandler is one service of `mgrpo sim`, with what its printed base
// URL ends in (e.g. "/v1").
type namedHandler struct {
	sim.Service
	suffix string
}

// serve starts the services, prints "name baseURL" lines, serves until ctx
// ends or a server fails, then shuts them down.
func serve(ctx context.Context, logger *slog.Logger, out io.Writer, handlers []namedHandler) error {
	services := make([]sim.Service, len(handlers))
	for i, h := range handlers {
		services[i] = h.Service
	}
	s, err := sim.Listen(services)
	var le *sim.ListenError
	if errors.As(err, &le) {
		return usagef("--%s %s: %w", le.Service, le.Addr, le.Err)
	}
	if err != nil {
		return err
	}
	for i, h := range handlers {
		fmt.Fprintf(out, "%s %s%s\n", h.Name, s.URLs[i], h.suffix)
		logger.Info("serving", "service", h.Name, "url", s.URLs[i])
	}
	select {
	case <-ctx.Done():
	case err = <-s.Err():
	}
	s.Stop(5 * time.Second)
	logger.Info("stopped")
	return err
}
