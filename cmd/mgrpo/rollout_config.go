package main

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
)

// runConfig is the configuration of `mgrpo rollout`: the YAML file given by
// --config, then the flags set on the command line on top. Every key has a
// `doc` tag; `mgrpo rollout --help` lists them all.
type runConfig struct {
	Run              string  `yaml:"run" doc:"run name, written into every sample (default: the out directory's name)"`
	Tasks            string  `yaml:"tasks" doc:"JSON Lines task file (id, question, answer, metadata); with sim and no tasks, the sim web's questions"`
	Out              string  `yaml:"out" doc:"output directory: step-NNNNNN/ folders, summary.jsonl"`
	Seed             uint64  `yaml:"seed" doc:"run seed: rollout seeds, alignment and the sim world derive from it"`
	Steps            int     `yaml:"steps" doc:"number of steps"`
	BatchSize        int     `yaml:"batch_size" doc:"queries per step (B)"`
	GroupSize        int     `yaml:"group_size" doc:"rollouts per query (K)"`
	DBar             string  `yaml:"dbar" doc:"executor trajectories per rollout after alignment: N or auto (0.99 quantile of observed d)"`
	Mode             string  `yaml:"mode" doc:"mgrpo (planner and executor samples), frozen-sub (planner only) or single (one agent, GRPO)"`
	DropZeroVariance bool    `yaml:"drop_zero_variance" doc:"drop groups whose rewards are all equal instead of emitting zero advantages"`
	Concurrency      int     `yaml:"concurrency" doc:"rollouts in flight across a step"`
	Format           string  `yaml:"format" doc:"jsonl, or parquet (JSONL plus Parquet copies)"`
	Grace            Seconds `yaml:"grace" doc:"after SIGINT, time in-flight rollouts get to finish (e.g. 30s)"`
	Sim              bool    `yaml:"sim" doc:"start the simulated world in-process and point every URL at it"`

	Planner  endpointConfig `yaml:"planner" doc:"planner model endpoints"`
	Executor endpointConfig `yaml:"executor" doc:"executor model endpoints (single mode: the single agent's)"`
	Reasoner endpointConfig `yaml:"reasoner" doc:"optional reasoning model behind the planner's reason tool"`
	Judge    endpointConfig `yaml:"judge" doc:"optional LLM judge: correctness when exact match fails, and r_expert (urls: [sim] with sim uses the simulated model as judge)"`

	Search  searchConfig  `yaml:"search" doc:"executor web tools"`
	Rewards rewardsConfig `yaml:"rewards" doc:"reward coefficients"`
	Budgets budgetsConfig `yaml:"budgets" doc:"agent budgets"`
	// Prompts overrides embedded prompt templates by name.
	Prompts map[string]string `yaml:"prompts" doc:"prompt template overrides by name (planner_system, executor_user, …)"`
}

// endpointConfig is one role's inference endpoints.
type endpointConfig struct {
	URLs        []string `yaml:"urls" doc:"base URLs (several: a pool with stickiness and failover)"`
	Model       string   `yaml:"model" doc:"served model name"`
	Dialect     string   `yaml:"dialect" doc:"vllm, sglang or openai (judges, reasoners)"`
	Temperature *float64 `yaml:"temperature" doc:"sampling temperature (0 is greedy)"`
	TopP        *float64 `yaml:"top_p" doc:"nucleus sampling"`
	TopK        *int     `yaml:"top_k" doc:"top-k sampling (vLLM/SGLang)"`
	Stop        []string `yaml:"stop" doc:"stop strings"`
	MaxTokens   int      `yaml:"max_tokens" doc:"completion cap per call (overrides the budget's)"`
	// ChatTemplateKwargs is passed to the server's chat template.
	ChatTemplateKwargs map[string]any `yaml:"chat_template_kwargs" doc:"chat template arguments, e.g. {enable_thinking: false}"`
	// APIKeyEnv names the environment variable holding the endpoint's key;
	// keys themselves never go in files or flags.
	APIKeyEnv string `yaml:"api_key_env" doc:"environment variable holding the API key"`
}

// searchConfig configures the executors' tools.
type searchConfig struct {
	Provider   string   `yaml:"provider" doc:"serper, searxng, brave, tavily, retriever or local"`
	URL        string   `yaml:"url" doc:"provider base URL override"`
	Index      string   `yaml:"index" doc:"index directory of the local provider"`
	AllowHosts []string `yaml:"allow_hosts" doc:"hosts (host or host:port) visit may fetch despite the SSRF guard"`
	MaxQueries int      `yaml:"max_queries" doc:"queries per search call"`
	Results    int      `yaml:"results" doc:"results per query"`
	Rate       float64  `yaml:"rate" doc:"provider requests per second (0: unlimited)"`
}

// rewardsConfig holds the reward coefficients.
type rewardsConfig struct {
	Alpha1         float64 `yaml:"alpha1" doc:"main reward: weight of r_format"`
	Alpha2         float64 `yaml:"alpha2" doc:"main reward: weight of r_correct"`
	Beta1          float64 `yaml:"beta1" doc:"sub reward: weight of r_format"`
	Beta2          float64 `yaml:"beta2" doc:"sub reward: weight of the main rollout's r_correct"`
	Beta3          float64 `yaml:"beta3" doc:"sub reward: weight of r_expert"`
	ExpertFallback string  `yaml:"expert_fallback" doc:"r_expert without a judge: format, zero or correct-main"`
}

// budgetsConfig holds the agents' budgets.
type budgetsConfig struct {
	PlannerTurns   int     `yaml:"planner_turns" doc:"planner model calls per rollout"`
	ExecutorTurns  int     `yaml:"executor_turns" doc:"executor model calls per subtask"`
	MaxTokens      int     `yaml:"max_tokens" doc:"completion tokens per call"`
	ContextTokens  int     `yaml:"context_tokens" doc:"model context; near it the agent is told to answer now"`
	Delegations    int     `yaml:"delegations" doc:"executors per rollout"`
	RolloutTimeout Seconds `yaml:"rollout_timeout" doc:"wall-clock limit per rollout (e.g. 10m)"`
}

// Seconds is a duration written as Go duration text ("30s", "10m") in
// YAML and flags.
type Seconds struct{ time.Duration }

// UnmarshalText parses a Go duration.
func (s *Seconds) UnmarshalText(b []byte) error {
	d, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: want e.g. 30s or 10m", b)
	}
	s.Duration = d
	return nil
}

// defaultRunConfig is the configuration before the file and the flags.
func defaultRunConfig() runConfig {
	w := rollout.DefaultRewardWeights()
	pb, eb, rb := agents.DefaultPlannerBudget(), agents.DefaultExecutorBudget(), agents.DefaultRolloutBudget()
	return runConfig{
		Seed: 1, Steps: 1, BatchSize: 8, GroupSize: 8, DBar: "auto", Mode: string(rollout.ModeMGRPO),
		Concurrency: 64, Format: "jsonl", Grace: Seconds{30 * time.Second},
		Planner:  endpointConfig{Dialect: "vllm"},
		Executor: endpointConfig{Dialect: "vllm"},
		Reasoner: endpointConfig{Dialect: "openai"},
		Judge:    endpointConfig{Dialect: "openai"},
		Search:   searchConfig{Provider: "serper", MaxQueries: 5, Results: 10},
		Rewards: rewardsConfig{Alpha1: w.Alpha1, Alpha2: w.Alpha2, Beta1: w.Beta1, Beta2: w.Beta2, Beta3: w.Beta3,
			ExpertFallback: string(rollout.DefaultExpertFallback)},
		Budgets: budgetsConfig{PlannerTurns: pb.MaxTurns, ExecutorTurns: eb.MaxTurns, MaxTokens: pb.MaxTokensPerTurn,
			ContextTokens: pb.ContextTokens, Delegations: rb.MaxDelegations, RolloutTimeout: Seconds{rb.WallClock}},
	}
}

// loadRunConfig reads a YAML file over the defaults; unknown keys are
// errors naming them.
func loadRunConfig(path string) (runConfig, error) {
	cfg := defaultRunConfig()
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("--config: %w", err)
	}
	if err := yaml.UnmarshalWithOptions(data, &cfg, yaml.DisallowUnknownField()); err != nil {
		return cfg, fmt.Errorf("--config %s: %s", path, yaml.FormatError(err, false, true))
	}
	return cfg, nil
}

// validate checks what the library constructors do not: required fields and
// their combinations, with how to fix each.
func (c runConfig) validate() error {
	var errs []error
	if c.Out == "" {
		errs = append(errs, errors.New("out: required (--out DIR)"))
	}
	if !c.Sim {
		if c.Tasks == "" {
			errs = append(errs, errors.New("tasks: required without --sim (--tasks FILE.jsonl)"))
		}
		roles := []struct {
			name string
			e    endpointConfig
		}{{"executor", c.Executor}}
		if c.Mode != string(rollout.ModeSingle) {
			roles = append(roles, struct {
				name string
				e    endpointConfig
			}{"planner", c.Planner})
		}
		for _, r := range roles {
			if len(r.e.URLs) == 0 || r.e.Model == "" {
				errs = append(errs, fmt.Errorf("%s: urls and model required without --sim (--%s-url URL --%s-model NAME)", r.name, r.name, r.name))
			}
		}
	}
	if c.simJudge() && !c.Sim {
		errs = append(errs, errors.New("judge: --judge-url sim needs --sim"))
	} else if !c.simJudge() && (len(c.Judge.URLs) == 0) != (c.Judge.Model == "") {
		errs = append(errs, errors.New("judge: give both urls and model (--judge-url, --judge-model), or neither"))
	}
	if (len(c.Reasoner.URLs) == 0) != (c.Reasoner.Model == "") {
		errs = append(errs, errors.New("reasoner: give both urls and model, or neither"))
	}
	switch c.Format {
	case "jsonl", "parquet":
	default:
		errs = append(errs, fmt.Errorf("format %q: want jsonl or parquet", c.Format))
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("concurrency %d: must be at least 1", c.Concurrency))
	}
	return errors.Join(errs...)
}

// simJudge reports whether the judge is the simulated world's model
// (--judge-url sim), which plays the project's judge prompts offline.
func (c runConfig) simJudge() bool {
	return len(c.Judge.URLs) == 1 && c.Judge.URLs[0] == "sim"
}

// configKeys lists every key of the configuration with its doc, for
// --help, in file order.
func configKeys() []string {
	var keys []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			name := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if name == "" {
				continue
			}
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(Seconds{}) {
				walk(f.Type, prefix+name+".")
				continue
			}
			keys = append(keys, fmt.Sprintf("  %-28s %s", prefix+name, f.Tag.Get("doc")))
		}
	}
	walk(reflect.TypeOf(runConfig{}), "")
	return keys
}
