package main

import (
	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/run"
)

// trainCommand runs the M-GRPO training loop.
func trainCommand() *cli.Command {
	return &cli.Command{
		Name:  "train",
		Usage: "train with M-GRPO: rollouts, rewards, alignment and advantages, then each model's batch to its trainer and the new weights to its servers, step after step",
		Description: "Every `mgrpo rollout` flag, plus the trainers. Each step: rollouts at the current policy versions →\n" +
			"step files → the planner's batch to --planner-trainer and the executors' to --executor-trainer,\n" +
			"concurrently (no gradient crosses) → the new weights to each role's endpoints (--weight-sync) →\n" +
			"the next step. Strictly on-policy unless --max-staleness S lets the next S steps' rollouts run during a\n" +
			"step's training (--partial-rollouts, --stale-policy: docs/training.md); --stream-groups makes a step of the first\n" +
			"--batch-size groups whose rollouts are in, not a fixed set. --mode mgrpo trains both models, frozen-sub the planner only,\n" +
			"single the single agent. A killed run continues with --resume and trains no batch twice.\n" +
			"YAML keys: the rollout keys (`mgrpo rollout --help`) and the train.* keys listed after the options.",
		Flags:  append(append(agentFlags(), farmFlags()...), trainFlags()...),
		Action: runTrain,
	}
}

// trainFlags are the flags of `mgrpo train` beyond `mgrpo rollout`'s.
func trainFlags() []cli.Flag { return configFlags(run.ScopeTrain) }

// runTrain is the action of `mgrpo train`.
func runTrain(c *cli.Context) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	opts := run.TrainOptions{RolloutOptions: run.RolloutOptions{Resume: c.Bool("resume"), Force: c.Bool("force"), RebuildStore: c.Bool("rebuild-store"), Lease: c.Duration("lease")}, KeepMaxStaleness: c.IsSet("max-staleness")}
	if c.IsSet("steps") {
		opts.SideSteps = c.Int("steps")
	}
	return runJob(c, cfg.Out, func(h run.Hooks) ([]rollout.StepSummary, error) {
		opts.Hooks = h
		return run.Train(c.Context, cfg, opts)
	})
}
