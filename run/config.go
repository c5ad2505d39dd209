package run

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/farm/gateway"
	"github.com/mgrpo/mgrpo/internal/yamlstrict"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/tools"
)

// Config is a run's whole configuration, as a YAML file holds it (keys in
// `yaml` tags, documented in `doc` tags, listed by Keys). The CLI reads the
// file given by --config and writes the flags set on the command line on
// top; a `flag` tag names the flag that sets a key, which Keys shows next
// to it. In a nested struct the flag is the parent's flag, a dash and the
// field's ("planner" + "url": --planner-url); a parent tagged flag:"-" has
// no flags for its keys. A `roleflag` tag names a flag that sets the key of
// every role whose field is tagged roleflags:"true" (--dialect sets
// planner.dialect and executor.dialect).
type Config struct {
	Run              string      `yaml:"run" category:"shape" flag:"run" scope:"farm" doc:"run {{NAME}}, written into every sample (default: the out directory's name)"`
	Tasks            string      `yaml:"tasks" category:"shape" flag:"tasks" scope:"farm" doc:"JSON Lines task {{FILE}} (id, question, answer, metadata); with sim and no tasks, the sim web's questions"`
	Out              string      `yaml:"out" category:"shape" flag:"out" doc:"output {{DIR}}: step-NNNNNN/ folders, summary.jsonl"`
	Seed             uint64      `yaml:"seed" category:"shape" flag:"seed" doc:"run seed: rollout seeds, alignment and the sim world derive from it"`
	Steps            int         `yaml:"steps" category:"shape" flag:"steps" scope:"farm" doc:"number of steps"`
	BatchSize        int         `yaml:"batch_size" category:"shape" flag:"batch-size" scope:"farm" doc:"queries per step ({{B}})"`
	GroupSize        int         `yaml:"group_size" category:"shape" flag:"group-size" scope:"farm" doc:"rollouts per query ({{K}}; the paper uses 8)"`
	DBar             string      `yaml:"dbar" category:"shape" flag:"dbar" scope:"farm" doc:"executor trajectories per rollout after alignment: {{N}} or auto (0.99 quantile of observed d)"`
	Mode             string      `yaml:"mode" category:"shape" flag:"mode" doc:"mgrpo (planner and executor samples), frozen-sub (planner only) or single (one agent, GRPO)"`
	DropZeroVariance bool        `yaml:"drop_zero_variance" category:"training" flag:"drop-zero-variance" scope:"farm" doc:"drop groups whose rewards are all equal instead of emitting zero advantages"`
	Concurrency      Concurrency `yaml:"concurrency" category:"shape" flag:"concurrency" doc:"{{N}}, or auto (auto:CAP: each role's requests to its engines adapt to their /metrics, with at most CAP, default 256, rollouts in flight; docs/concurrency.md): rollouts in flight across a step"`
	Format           string      `yaml:"format" category:"output" flag:"format" scope:"farm" doc:"jsonl, or parquet (JSONL plus Parquet copies)"`
	Grace            Duration    `yaml:"grace" doc:"after SIGINT, time in-flight rollouts get to finish (e.g. 30s); a second SIGINT stops at once"`
	Sim              bool        `yaml:"sim" category:"sim" flag:"sim" doc:"start the simulated world in-process and point every URL at it"`
	// SimStripReasoning makes the sim's chat template drop earlier turns'
	// reasoning, so multi-turn trajectories split at drift events.
	SimStripReasoning bool `yaml:"sim_strip_reasoning" category:"sim" flag:"sim-strip-reasoning" doc:"the sim's chat template drops earlier turns' <think> blocks (drift splits trajectories)"`
	// The sim's other template behaviours of real models and the route
	// families its servers lack (mgrpo sim's flags of the same names).
	SimStripReasoningBeforeLastQuery bool   `yaml:"sim_strip_reasoning_before_last_query" category:"sim" flag:"sim-strip-reasoning-before-last-query" doc:"the sim's chat template drops <think> blocks only before the last user message, Qwen3's own rule"`
	SimMergeToolResults              bool   `yaml:"sim_merge_tool_results" category:"sim" flag:"sim-merge-tool-results" doc:"the sim's chat template merges consecutive tool results into one user turn, as Qwen3's does"`
	SimCanonicalToolArgs             bool   `yaml:"sim_canonical_tool_args" category:"sim" flag:"sim-canonical-tool-args" doc:"the sim's chat template re-serializes earlier tool calls' arguments as canonical JSON"`
	SimTrimContent                   bool   `yaml:"sim_trim_content" category:"sim" flag:"sim-trim-content" doc:"the sim's chat template trims whitespace around message content"`
	SimReasoningContent              bool   `yaml:"sim_reasoning_content" category:"sim" flag:"sim-reasoning-content" doc:"the sim's vllm servers answer reasoning in reasoning_content, as older vLLM did"`
	SimStrictReasoningInput          bool   `yaml:"sim_strict_reasoning_input" category:"sim" flag:"sim-strict-reasoning-input" doc:"the sim's servers read reasoning on input only from the field their version writes (reasoning on current vLLM, reasoning_content on older vLLM and SGLang)"`
	SimDisableRoutes                 string `yaml:"sim_disable_routes" category:"sim" flag:"sim-disable-routes" doc:"route families the sim's servers lack ({{LIST}} of render, generate, derender, tokenize, token-prompt, or all)"`
	// SimTrainerStepTime is how long the sim trainer's optimizer step
	// takes, as a GPU step would (train --sim).
	SimTrainerStepTime Duration `yaml:"sim_trainer_step_time" category:"sim" flag:"sim-trainer-step-time" scope:"train" doc:"train --sim: how long each of the sim trainer's optimizer steps takes, as a GPU step would (0: none)"`
	// SimFaults are the sim inference servers' injected failures, to see
	// what a run does with an unreliable cluster.
	SimFaults SimFaultsConfig `yaml:"sim_faults" category:"sim" flag:"sim-fault" doc:"--sim: failures the simulated inference servers inject"`
	Store     string          `yaml:"store" category:"store" flag:"store" scope:"farm" doc:"the run's store {{URL}}: sqlite://PATH (one machine; default sqlite://OUT/store.db), redis://[user@]HOST:PORT/DB or rediss://… (many machines; password from MGRPO_STORE_PASSWORD), or none (results in memory, no resume)"`
	// The failure policy (see docs/architecture.md, "What is scored,
	// retried and excluded").
	RolloutRetries        int     `yaml:"rollout_retries" category:"failures" flag:"rollout-retries" scope:"farm" doc:"{{N}} times an infra-failed rollout (an engine, judge or tool provider that did not answer) runs again, same task and seed, with backoff (0: never)"`
	MaxToolOutageFraction float64 `yaml:"max_tool_outage_fraction" category:"failures" flag:"max-tool-outage-fraction" scope:"farm" doc:"a rollout whose tool calls hit provider outages (5xx, 429, timeout, refused) on more than this fraction of its calls counts as an infra failure, retried and excluded as one (in [0, 1]; 1: never)"`
	OnInfraFailure        string  `yaml:"on_infra_failure" category:"failures" flag:"on-infra-failure" scope:"farm" doc:"a rollout still an infra failure after its retries: exclude its group from the step's batches, counted (exclude, the default), or train it as a zero reward (zero, the behaviour before failure classes)"`
	MaxFailedFraction     float64 `yaml:"max_failed_fraction" category:"failures" flag:"max-failed-fraction" scope:"farm" doc:"stop the run (exit 1, the step not written) when more than this fraction of a step's rollouts are still infra failures after their retries, or when all of them failed (in [0, 1])"`
	Workers               int     `yaml:"workers" category:"store" flag:"workers" scope:"farm" doc:"{{N}} rollouts this process runs from the store's queue beside mgrpo worker processes (0: coordinate only); -1 (auto): directly with a sqlite store, --concurrency of them from the queue with redis"`
	Record                bool    `yaml:"record" category:"store" flag:"record" scope:"agent" json:",omitempty" doc:"keep every model answer (token ids, logprobs, text, tool calls), tool observation and judge answer in the run's store, keyed by the request, so mgrpo replay can rerun the agents without engine or web"`

	Planner  EndpointConfig `yaml:"planner" category:"endpoints" flag:"planner" roleflags:"true" doc:"planner model endpoints"`
	Executor EndpointConfig `yaml:"executor" category:"endpoints" flag:"executor" roleflags:"true" doc:"executor model endpoints (single mode: the single agent's)"`
	Reasoner EndpointConfig `yaml:"reasoner" category:"endpoints" flag:"-" doc:"optional reasoning model behind the planner's reason tool"`
	Judge    EndpointConfig `yaml:"judge" category:"endpoints" flag:"judge" doc:"optional LLM judge: correctness when exact match fails, and r_expert (urls: [sim] with sim uses the simulated model as judge)"`

	// Gateway trains the user's own agent instead of the built-in ones
	// (docs/gateway.md); left out of the run record when unset.
	Gateway GatewayConfig `yaml:"gateway" category:"endpoints" json:",omitzero" doc:"train your own agent: the OpenAI-compatible gateway that serves it per rollout and role"`

	Search  SearchConfig   `yaml:"search" category:"tools" doc:"executor web tools"`
	Tools   ToolsConfig    `yaml:"tools" category:"tools" json:",omitzero" doc:"tools beyond search and visit"`
	Rewards RewardsConfig  `yaml:"rewards" category:"training" doc:"reward coefficients"`
	Budgets BudgetsConfig  `yaml:"budgets" category:"timeouts" doc:"agent budgets"`
	Prices  rollout.Prices `yaml:"prices" doc:"the cost meter's price table (all 0 unless set)"`
	Train   TrainConfig    `yaml:"train" category:"training" scope:"train" doc:"mgrpo train: the trainers, their optimizer and the weight sync"`
	// Prompts overrides embedded prompt templates by name.
	Prompts map[string]string `yaml:"prompts" doc:"prompt template overrides by name (planner_system, executor_user, …)"`
}

// EndpointConfig is one role's inference endpoints (llm.EndpointConfig).
type EndpointConfig = llm.EndpointConfig

// GatewayConfig configures the gateway (farm/gateway; gateway.Settings).
type GatewayConfig = gateway.Settings

// EnvGatewayToken names the environment variable holding the bearer token
// every gateway request must carry, when set.
const EnvGatewayToken = "MGRPO_GATEWAY_TOKEN"

// SearchConfig configures the executors' tools (tools.SearchSettings).
type SearchConfig = tools.SearchSettings

// SimFaultsConfig are the faults the sim's inference servers inject
// (simllm.FaultsConfig).
type SimFaultsConfig = simllm.FaultsConfig

// RewardsConfig holds the reward coefficients (rollout.RewardsConfig).
type RewardsConfig = rollout.RewardsConfig

// BudgetsConfig holds the agents' budgets (agents.BudgetsConfig).
type BudgetsConfig = agents.BudgetsConfig

// TrainConfig configures mgrpo train (farm.TrainConfig).
type TrainConfig = farm.TrainConfig

// Duration is a time.Duration written as Go duration text ("30s", "10m")
// in YAML.
type Duration = yamlstrict.Duration

// DefaultConfig is the configuration before the file and the flags: one
// step of 8 questions × 8 rollouts, d̄ auto, the paper's reward weights and
// the agents' default budgets.
func DefaultConfig() Config {
	w := rollout.DefaultRewardWeights()
	pb, eb, rb := agents.DefaultPlannerBudget(), agents.DefaultExecutorBudget(), agents.DefaultRolloutBudget()
	return Config{
		Seed: 1, Steps: 1, BatchSize: 8, GroupSize: 8, DBar: "auto", Mode: string(rollout.ModeMGRPO),
		Concurrency: ConcurrencyOf(64), Format: "jsonl", Grace: Duration{Duration: 30 * time.Second}, Workers: -1,
		RolloutRetries: farm.DefaultRolloutRetries, MaxToolOutageFraction: farm.DefaultMaxToolOutageFraction,
		OnInfraFailure: string(farm.InfraExclude), MaxFailedFraction: farm.DefaultMaxFailedFraction,
		Planner:  OnPolicySampling(EndpointConfig{Dialect: "vllm"}),
		Executor: OnPolicySampling(EndpointConfig{Dialect: "vllm"}),
		Reasoner: EndpointConfig{Dialect: "openai"},
		Judge:    EndpointConfig{Dialect: "openai"},
		Search:   SearchConfig{Provider: "serper", MaxQueries: 5, Results: 10},
		Rewards: RewardsConfig{Alpha1: w.Alpha1, Alpha2: w.Alpha2, Beta1: w.Beta1, Beta2: w.Beta2, Beta3: w.Beta3,
			ExpertFallback: string(rollout.DefaultExpertFallback)},
		Budgets: BudgetsConfig{PlannerTurns: pb.MaxTurns, ExecutorTurns: eb.MaxTurns, MaxTokens: pb.MaxTokensPerTurn,
			ContextTokens: pb.ContextTokens, Delegations: rb.MaxDelegations, RolloutTimeout: Duration{Duration: rb.WallClock}},
	}
}

// yamlKinds name the configuration's value types of their own syntax in
// a YAML error.
var yamlKinds = map[reflect.Type]string{
	reflect.TypeFor[Duration](): "a duration such as 30s or 10m",
	reflect.TypeFor[Timeout]():  "auto or a duration such as 90s or 5m",
}

// LoadConfig reads the YAML file at path over DefaultConfig (path "" gives
// the defaults). Unknown keys and values of the wrong type are errors
// (wrapping ErrConfig) that name the file, the line and the key.
func LoadConfig(path string) (Config, error) {
	cfg := DefaultConfig()
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("%w: --config: %w", ErrConfig, err)
	}
	if unknown := yamlstrict.UnknownKeys(data, &cfg); len(unknown) > 0 {
		return cfg, fmt.Errorf("%w: --config %s: %d unknown key(s); `mgrpo rollout --help` lists the keys:\n  %s", ErrConfig, path, len(unknown), strings.Join(unknown, "\n  "))
	}
	if err := yaml.UnmarshalWithOptions(data, &cfg, yaml.DisallowUnknownField()); err != nil {
		return cfg, fmt.Errorf("%w: --config %s: %s", ErrConfig, path, yamlstrict.DescribeError(err, yamlKinds))
	}
	return cfg, nil
}

// Timeout is a model call timeout: a duration or auto (llm.Timeout).
type Timeout = llm.Timeout

// TimeoutOf returns a Timeout of exactly d.
func TimeoutOf(d time.Duration) Timeout { return llm.TimeoutOf(d) }

// Concurrency is the concurrency key: a fixed number of rollouts in
// flight, or auto (farm.Concurrency; docs/concurrency.md).
type Concurrency = farm.Concurrency

// ConcurrencyOf returns a fixed concurrency of n rollouts in flight.
func ConcurrencyOf(n int) Concurrency { return farm.ConcurrencyOf(n) }
