package main

import (
	"errors"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/run"
)

// rolloutCommand runs the rollout farm.
func rolloutCommand() *cli.Command {
	return &cli.Command{
		Name:  "rollout",
		Usage: "run M-GRPO rollouts: planner + executors on vLLM/SGLang endpoints, rewards, advantages, aligned token-level samples",
		Description: "Runs STEPS steps of BATCH-SIZE queries × GROUP-SIZE rollouts and writes, per step,\n" +
			"OUT/step-NNNNNN/{planner,executor,stats,rollouts}.jsonl (and Parquet with --format parquet),\n" +
			"plus a line of OUT/summary.jsonl. --sim runs everything against the simulated world, offline.\n" +
			"Ctrl-C lets in-flight rollouts finish within the grace period; a second Ctrl-C stops at once.\n" +
			"Flags override the YAML file given by --config; its keys are listed after the options.",
		Flags:  append(agentFlags(), farmFlags()...),
		Action: runRollout,
	}
}

// agentFlags configure the agents, their endpoints and tools; `mgrpo
// rollout`, `mgrpo train` and `mgrpo eval` share them. Defaults shown in
// --help are the configuration's defaults (a flag overrides the YAML file
// only when set).
func agentFlags() []cli.Flag {
	flags := []cli.Flag{&cli.PathFlag{Name: "config", Category: run.Category("output"),
		Usage: "YAML configuration `FILE` (keys in `mgrpo rollout --help`; flags override it)"}}
	return append(append(flags, configFlags(run.ScopeAgent)...), metricsFlag())
}

// farmFlags are the flags of a run of steps (`mgrpo rollout` and `mgrpo
// train`).
func farmFlags() []cli.Flag {
	return append(configFlags(run.ScopeFarm),
		&cli.BoolFlag{Name: "resume", Category: run.Category("store"), Usage: "continue the run in --out (or --store): written steps are kept, stored rollouts are not redone"},
		&cli.BoolFlag{Name: "force", Category: run.Category("store"), Usage: "write the run into an --out directory that holds files that are not a run's"},
		&cli.BoolFlag{Name: "rebuild-store", Category: run.Category("store"), Usage: "with --resume, rebuild the store's view of a run the store lost (emptied, a Redis back without its data) from the step files in --out: written steps are kept, not rerun"},
		&cli.DurationFlag{Name: "lease", Category: run.Category("store"), Value: run.DefaultLease, Usage: "the coordinator's lease: its lock on the run, renewed every third of it, is taken over that long after it died; rollouts it runs itself from the queue are leased as long"})
}

// loadConfig reads --config and overlays the flags set on the command line.
func loadConfig(c *cli.Context) (run.Config, error) {
	cfg, err := run.LoadConfig(c.Path("config"))
	if err != nil {
		return cfg, err
	}
	return cfg, overlayConfigFlags(c, &cfg)
}

// runRollout is the action of `mgrpo rollout`: configuration, then the
// world (sim or real endpoints), then the farm.
func runRollout(c *cli.Context) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	return runJob(c, cfg.Out, func(h run.Hooks) ([]rollout.StepSummary, error) {
		return run.Rollout(c.Context, cfg, run.RolloutOptions{Resume: c.Bool("resume"), Force: c.Bool("force"), RebuildStore: c.Bool("rebuild-store"), Lease: c.Duration("lease"), Hooks: h})
	})
}

// isConfigError reports whether err is a bad command line or configuration.
// urfave/cli reports a missing required flag outside its OnUsageError hook,
// with an unexported type, so that case is recognised by its fixed wording
// (TestCLIExitCodesAndMessages fails if the wording changes).
func isConfigError(err error) bool {
	var ue usageError
	return errors.As(err, &ue) || errors.Is(err, run.ErrConfig) || strings.HasPrefix(err.Error(), "Required flag")
}
