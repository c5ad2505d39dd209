package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/run"
	"github.com/mgrpo/mgrpo/tools/search"
)

// rolloutCommand runs the rollout farm.
func rolloutCommand() *cli.Command {
	return &cli.Command{
		Name:  "rollout",
		Usage: "run M-GRPO rollouts: planner + executors on vLLM/SGLang endpoints, rewards, advantages, aligned token-level samples",
		Description: "Runs STEPS steps of BATCH-SIZE queries × GROUP-SIZE rollouts and writes, per step,\n" +
			"OUT/step-NNNNNN/{planner,executor,stats,rollouts}.jsonl (and Parquet with --format parquet),\n" +
			"plus a line of OUT/summary.jsonl. --sim runs everything against the simulated world, offline.\n" +
			"Ctrl-C lets in-flight rollouts finish within the grace period; a second Ctrl-C stops at once.\n\n" +
			"Flags override the YAML file given by --config. Its keys (train.* are `mgrpo train`'s):\n" + strings.Join(run.Keys(), "\n"),
		Flags:  append(agentFlags(), farmFlags()...),
		Action: runRollout,
	}
}

// agentFlags configure the agents, their endpoints and tools; `mgrpo
// rollout` and `mgrpo eval` share them. Defaults shown in --help are the
// configuration's defaults (a flag overrides the YAML file only when set).
func agentFlags() []cli.Flag {
	d := run.DefaultConfig()
	return []cli.Flag{
		&cli.PathFlag{Name: "config", Usage: "YAML configuration `FILE` (keys in `mgrpo rollout --help`; flags override it)"},
		&cli.BoolFlag{Name: "sim", Usage: "start the simulated world in-process and point every URL at it"},
		&cli.DurationFlag{Name: "sim-trainer-step-time", Usage: "train --sim: how long each of the sim trainer's optimizer steps takes, as a GPU step would (0: none)"},
		&cli.BoolFlag{Name: "sim-strip-reasoning", Usage: "--sim: the sim's chat template drops earlier turns' <think> blocks, as Qwen3's does, so trajectories split where the prompt prefix breaks (drift)"},
		&cli.PathFlag{Name: "out", Usage: "output `DIR`"},
		&cli.StringSliceFlag{Name: "planner-url", Usage: "planner base `URL`s (comma-separated or repeated)"},
		&cli.StringFlag{Name: "planner-model", Usage: "planner model `NAME`"},
		&cli.StringSliceFlag{Name: "executor-url", Usage: "executor base `URL`s"},
		&cli.StringFlag{Name: "executor-model", Usage: "executor model `NAME`"},
		&cli.StringFlag{Name: "dialect", Value: d.Executor.Dialect, Usage: "dialect of the planner and executor endpoints: vllm or sglang"},
		&cli.GenericFlag{Name: "call-timeout", Value: &run.Timeout{}, Usage: "deadline of one planner or executor model call, every attempt included: a `DURATION`, or auto (3 × the attempt timeout)"},
		&cli.BoolFlag{Name: "stream", Usage: "receive planner and executor completions as server-sent events, token ids included; a server that cannot is called unstreamed, said at start"},
		&cli.GenericFlag{Name: "idle-timeout", Value: &run.Timeout{}, Usage: "with --stream: silence after which a planner or executor stream is a stall, closed and retried at once: a `DURATION` shorter than the attempt timeout, or auto (60s)"},
		&cli.GenericFlag{Name: "attempt-timeout", Value: &run.Timeout{}, Usage: "deadline of one attempt of a planner or executor call, after which it is retried on another endpoint: a `DURATION`, or auto (60s + 100ms × the call's max_tokens)"},
		&cli.DurationFlag{Name: "rollout-timeout", Value: d.Budgets.RolloutTimeout.Duration, Usage: "wall-clock limit per rollout (`DURATION`): past it the rollout ends with what it has, recorded with the reason"},
		&cli.StringFlag{Name: "search-provider", Value: d.Search.Provider, Usage: search.NameList()},
		&cli.StringFlag{Name: "search-url", Usage: "search provider base `URL` override"},
		&cli.StringSliceFlag{Name: "allow-host", Usage: "`host[:port]` the visit tool may fetch despite the SSRF guard"},
		&cli.Uint64Flag{Name: "seed", Value: d.Seed, Usage: "run seed"},
		&cli.StringFlag{Name: "mode", Value: d.Mode, Usage: "mgrpo, frozen-sub or single"},
		&cli.IntFlag{Name: "concurrency", Value: d.Concurrency, Usage: "rollouts in flight"},
		&cli.StringSliceFlag{Name: "judge-url", Usage: "OpenAI-compatible judge base `URL` (key from the judge's api_key_env, default " + run.EnvJudgeKey + "); with --sim, \"sim\" uses the simulated model as judge"},
		&cli.StringFlag{Name: "judge-model", Usage: "judge model `NAME`"},
		metricsFlag(),
	}
}

// farmFlags are the training-run flags of `mgrpo rollout`.
func farmFlags() []cli.Flag {
	d := run.DefaultConfig()
	return []cli.Flag{
		&cli.PathFlag{Name: "tasks", Usage: "task `FILE` (JSON Lines: id, question, answer, metadata)"},
		&cli.StringFlag{Name: "run", Usage: "run `NAME` (default: the out directory's name)"},
		&cli.IntFlag{Name: "group-size", Value: d.GroupSize, Usage: "rollouts per query (`K`)"},
		&cli.StringFlag{Name: "dbar", Value: d.DBar, Usage: "aligned executor trajectories per rollout: `N` or auto"},
		&cli.IntFlag{Name: "batch-size", Value: d.BatchSize, Usage: "queries per step (`B`)"},
		&cli.IntFlag{Name: "steps", Value: d.Steps, Usage: "number of steps"},
		&cli.StringFlag{Name: "format", Value: d.Format, Usage: "jsonl or parquet"},
		&cli.BoolFlag{Name: "drop-zero-variance", Usage: "drop zero-variance groups instead of zero advantages"},
		&cli.StringFlag{Name: "expert-fallback", Value: d.Rewards.ExpertFallback, Usage: "r_expert without a judge: format, zero or correct-main"},
		&cli.StringFlag{Name: "store", Usage: "the run's store `URL`: sqlite://PATH (default sqlite://OUT/store.db), redis://[user@]HOST:PORT/DB (password from " + run.EnvStorePassword + "), or none"},
		&cli.IntFlag{Name: "workers", Value: d.Workers, Usage: "`N` rollouts this process runs from the store's queue, beside mgrpo worker processes: 0 to coordinate only, -1 for auto (direct with sqlite, --concurrency with redis)"},
		&cli.BoolFlag{Name: "resume", Usage: "continue the run in --out (or --store): written steps are kept, stored rollouts are not redone"},
	}
}

// overlayFlags writes the flags set on the command line over cfg.
func overlayFlags(c *cli.Context, cfg *run.Config) {
	str := func(name string, dst *string) {
		if c.IsSet(name) {
			*dst = c.String(name)
		}
	}
	num := func(name string, dst *int) {
		if c.IsSet(name) {
			*dst = c.Int(name)
		}
	}
	urls := func(name string, dst *[]string) {
		if c.IsSet(name) {
			*dst = nil
			for _, v := range c.StringSlice(name) {
				for _, u := range strings.Split(v, ",") {
					if u = strings.TrimSpace(u); u != "" {
						*dst = append(*dst, u)
					}
				}
			}
		}
	}
	if c.IsSet("sim-trainer-step-time") {
		cfg.SimTrainerStepTime.Duration = c.Duration("sim-trainer-step-time")
	}
	if c.IsSet("sim-strip-reasoning") {
		cfg.SimStripReasoning = c.Bool("sim-strip-reasoning")
	}
	if c.IsSet("sim") {
		cfg.Sim = c.Bool("sim")
	}
	str("tasks", &cfg.Tasks)
	str("out", &cfg.Out)
	str("run", &cfg.Run)
	urls("planner-url", &cfg.Planner.URLs)
	str("planner-model", &cfg.Planner.Model)
	urls("executor-url", &cfg.Executor.URLs)
	str("executor-model", &cfg.Executor.Model)
	if c.IsSet("dialect") {
		cfg.Planner.Dialect, cfg.Executor.Dialect = c.String("dialect"), c.String("dialect")
	}
	for name, dst := range map[string][2]*run.Timeout{
		"call-timeout":    {&cfg.Planner.CallTimeout, &cfg.Executor.CallTimeout},
		"attempt-timeout": {&cfg.Planner.AttemptTimeout, &cfg.Executor.AttemptTimeout},
		"idle-timeout":    {&cfg.Planner.IdleTimeout, &cfg.Executor.IdleTimeout},
	} {
		if v, ok := c.Generic(name).(*run.Timeout); ok && c.IsSet(name) {
			*dst[0], *dst[1] = *v, *v
		}
	}
	if c.IsSet("stream") {
		cfg.Planner.Stream, cfg.Executor.Stream = c.Bool("stream"), c.Bool("stream")
	}
	if c.IsSet("rollout-timeout") {
		cfg.Budgets.RolloutTimeout.Duration = c.Duration("rollout-timeout")
	}
	str("search-provider", &cfg.Search.Provider)
	str("search-url", &cfg.Search.URL)
	if c.IsSet("allow-host") {
		cfg.Search.AllowHosts = append(cfg.Search.AllowHosts, c.StringSlice("allow-host")...)
	}
	num("group-size", &cfg.GroupSize)
	str("dbar", &cfg.DBar)
	num("batch-size", &cfg.BatchSize)
	num("steps", &cfg.Steps)
	if c.IsSet("seed") {
		cfg.Seed = c.Uint64("seed")
	}
	str("mode", &cfg.Mode)
	num("concurrency", &cfg.Concurrency)
	str("format", &cfg.Format)
	if c.IsSet("drop-zero-variance") {
		cfg.DropZeroVariance = c.Bool("drop-zero-variance")
	}
	str("expert-fallback", &cfg.Rewards.ExpertFallback)
	urls("judge-url", &cfg.Judge.URLs)
	str("judge-model", &cfg.Judge.Model)
	str("store", &cfg.Store)
	num("workers", &cfg.Workers)
}

// loadConfig reads --config and overlays the flags set on the command line.
func loadConfig(c *cli.Context) (run.Config, error) {
	cfg, err := run.LoadConfig(c.Path("config"))
	if err != nil {
		return cfg, err
	}
	overlayFlags(c, &cfg)
	return cfg, nil
}

// runRollout is the action of `mgrpo rollout`: configuration, then the
// world (sim or real endpoints), then the farm.
func runRollout(c *cli.Context) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("rollout %w", err)
	}
	return executeRun(c.Context, cfg, runOptions{resume: c.Bool("resume")}, c.String("metrics-addr"), loggerOf(c), c.App.Writer, consoleOf(c))
}

// isConfigError reports whether err is a bad command line or configuration.
// urfave/cli reports a missing required flag outside its OnUsageError hook,
// with an unexported type, so that case is recognised by its fixed wording
// (TestCLIExitCodesAndMessages fails if the wording changes).
func isConfigError(err error) bool {
	var ue usageError
	return errors.As(err, &ue) || errors.Is(err, run.ErrConfig) || strings.HasPrefix(err.Error(), "Required flag")
}
