package run

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/sim"
	"github.com/mgrpo/mgrpo/sim/web"
	"github.com/mgrpo/mgrpo/tools/mcp"
	"github.com/mgrpo/mgrpo/tools/search"
)

// SimModel is the model name the simulated inference server serves.
const SimModel = "sim-qwen3"

// simSearchKey is the API key sent to the simulated web's Serper-shaped
// search, which accepts any key unless it was started with one.
const simSearchKey = "sim"

// StartSim starts the simulated world when c.Sim is set and points every
// endpoint and tool of c at it: planner and executor (and the judge with
// --judge-url sim) at the inference server, search at the web's
// Serper-shaped API, with the web's host allowed past the SSRF guard. It
// returns nil when c.Sim is not set. The caller closes the world.
//
// A run that trains with the sim trainer (SimTraining, after
// ApplySimTraining) gets a training world: the planner and the executors
// on inference servers of their own, and the trainer URLs set to the
// world's trainer.
func StartSim(c *Config, logger *slog.Logger) (*sim.World, error) {
	if !c.Sim {
		return nil, nil
	}
	training := c.SimTraining()
	opts := sim.Options{Seed: c.Seed, Dialect: c.Executor.Dialect, Logger: logger,
		Training: training, CheckpointDir: c.simCheckpoints(), StripReasoning: c.SimStripReasoning,
		TrainerStepTime: c.SimTrainerStepTime.Duration, Faults: c.SimFaults.Faults()}
	if c.pinsVersions() {
		// The versions a step's rollouts may be pinned to while later
		// steps train: S + 1, and one to spare.
		opts.KeptVersions = c.Train.MaxStaleness + 2
	}
	opts.Template = sim.TemplateOptions{StripReasoningBeforeLastQuery: c.SimStripReasoningBeforeLastQuery, MergeToolResults: c.SimMergeToolResults, CanonicalToolArgs: c.SimCanonicalToolArgs,
		TrimContent: c.SimTrimContent, ReasoningContent: c.SimReasoningContent, StrictReasoningInput: c.SimStrictReasoningInput}
	opts.DisabledRoutes = c.SimDisableRoutes
	if err := c.simSampling(&opts, training); err != nil {
		return nil, err
	}
	w, err := sim.Start(opts)
	if err != nil {
		return nil, err
	}
	c.Planner.URLs, c.Executor.URLs = []string{w.LLMURL}, []string{w.ExecutorLLMURL}
	for _, e := range []*EndpointConfig{&c.Planner, &c.Executor} {
		if e.Model == "" {
			e.Model = SimModel
		}
	}
	if training {
		for _, u := range []*string{&c.Train.PlannerTrainer, &c.Train.ExecutorTrainer} {
			if *u == SimTrainer {
				*u = "tinker+" + w.TrainerURL
			}
		}
		logger.Info("sim trainer started", "trainer", w.TrainerURL, "executor_llm", w.ExecutorLLMURL, "checkpoints", c.simCheckpoints())
	}
	if c.SimJudge() {
		c.Judge.URLs, c.Judge.Dialect = []string{w.LLMURL}, "openai"
		if c.Judge.Model == "" {
			c.Judge.Model = SimModel
		}
	}
	for i := range c.Tools.MCP {
		if c.Tools.MCP[i].URL == mcp.SimURL {
			c.Tools.MCP[i].URL = w.MCPURL
		}
	}
	c.Search.Provider, c.Search.URL = "serper", w.WebURL
	c.Search.AllowHosts = append(c.Search.AllowHosts, w.WebHost)
	logger.Info("simulated world started", "llm", w.LLMURL, "web", w.WebURL)
	return w, nil
}

// simSampling sets the sim's logprobs mode and its trainer's temperature
// from the roles' settings: a role that says logprobs_mode processed gets
// inference servers launched as vLLM with --logprobs-mode
// processed_logprobs, and the sim trainer scores at the temperature its
// trained roles sample at. The sim trainer serves both roles with one
// temperature, so trained roles that sample at different ones are a
// configuration error.
func (c Config) simSampling(o *sim.Options, training bool) error {
	if o.Dialect != "sglang" && (c.Planner.LogprobsMode == LogprobsProcessed || c.Executor.LogprobsMode == LogprobsProcessed) {
		o.LogprobsMode = "processed_logprobs"
	}
	if !training {
		return nil
	}
	mode, err := rollout.ParseMode(c.Mode)
	if err != nil {
		return nil // Validate reports the mode
	}
	temps := map[float64][]string{}
	for _, role := range trainedRoles(mode, c.Train.Role) {
		e := c.Planner
		if role == "executor" {
			e = c.Executor
		}
		t := 1.0
		if e.Temperature != nil && *e.Temperature > 0 {
			t = *e.Temperature
		}
		temps[t] = append(temps[t], role)
		o.TrainerTemperature = t
	}
	if len(temps) > 1 {
		return fmt.Errorf("%w: planner.temperature and executor.temperature: the sim trainer scores both roles at one sampling temperature; give them the same one", ErrConfig)
	}
	return nil
}

// Getenv returns how the tools read their API keys: os.Getenv, except that
// with a simulated world the search key is one the sim's web accepts.
func Getenv(w *sim.World) func(string) string {
	return SimGetenv(w != nil)
}

// SimGetenv is Getenv for a process that plays a simulated world another
// process started (a worker of a sim run): the sim's search key when sim is
// set.
func SimGetenv(sim bool) func(string) string {
	if !sim {
		return os.Getenv
	}
	return func(k string) string {
		if k == search.EnvSerper {
			return simSearchKey
		}
		return os.Getenv(k)
	}
}

// SimTasks returns the simulated web's questions as tasks, without
// touching the disk.
func SimTasks(w *sim.World) ([]farm.Task, error) {
	var buf bytes.Buffer
	if err := web.WriteTasks(&buf, w.Web.Questions, "jsonl"); err != nil {
		return nil, fmt.Errorf("sim tasks: %w", err)
	}
	return farm.ReadTasks(&buf, "the sim web's questions")
}
