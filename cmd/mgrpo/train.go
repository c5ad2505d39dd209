package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/rollout/farm"
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
			"single the single agent. A killed run continues with --resume and trains no batch twice.\n\n" +
			"YAML keys: the rollout keys (`mgrpo rollout --help`) and train.*:\n" + strings.Join(trainKeys(), "\n"),
		Flags:  append(append(agentFlags(), farmFlags()...), trainFlags()...),
		Action: runTrain,
	}
}

// trainKeys lists the train.* configuration keys.
func trainKeys() []string {
	var out []string
	for _, k := range run.Keys() {
		if strings.HasPrefix(strings.TrimSpace(k), "train.") {
			out = append(out, k)
		}
	}
	return out
}

// trainFlags are the flags of `mgrpo train` beyond `mgrpo rollout`'s.
func trainFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "planner-trainer", Usage: "the planner's (single agent's) trainer `URL`: tinker+https://HOST, http(s)://HOST (docs/trainer-api.md) or file://DIR"},
		&cli.StringFlag{Name: "executor-trainer", Usage: "the executors' trainer `URL` (mode mgrpo)"},
		&cli.StringFlag{Name: "base-model-planner", Usage: "the planner's base model `NAME` as the trainer knows it"},
		&cli.StringFlag{Name: "base-model-executor", Usage: "the executors' base model `NAME`"},
		&cli.IntFlag{Name: "lora-rank", Usage: "LoRA rank `N` (0: the trainer's default)"},
		&cli.StringFlag{Name: "loss", Usage: "importance_sampling (default) or ppo"},
		&cli.Float64Flag{Name: "clip-low", Usage: "PPO clip below 1 (default 0.2)"},
		&cli.Float64Flag{Name: "clip-high", Usage: "PPO clip above 1 (default 0.2)"},
		&cli.Float64Flag{Name: "lr", Usage: "Adam learning rate (default 1e-5)"},
		&cli.StringFlag{Name: "weight-sync", Usage: "how new weights reach the endpoints: sglang, vllm (with --weight-update-path or --weight-update-command; the servers in dev mode) or none (the trainer pushes them)"},
		&cli.StringFlag{Name: "weights-path", Usage: "`TEMPLATE` of the path the servers load: {ref}, {name}, {role}, {step}, {version}"},
		&cli.StringFlag{Name: "weight-update-path", Usage: "--weight-sync vllm: the `ROUTE` each server loads new weights from (with --weight-update-body)"},
		&cli.StringFlag{Name: "weight-update-body", Usage: "--weight-sync vllm: the update call's JSON body `TEMPLATE`, e.g. '{\"model_path\": \"{path}\"}'"},
		&cli.StringSliceFlag{Name: "weight-update-command", Usage: "--weight-sync vllm: instead of the route, a command run per endpoint, one `ARG` per flag ({endpoint}, {path}, …)"},
		&cli.StringFlag{Name: "weight-version-path", Usage: "the GET `ROUTE` reporting an endpoint's weight_version, to verify a sync (vLLM: e.g. /weight_info)"},
		&cli.IntFlag{Name: "max-staleness", Usage: "asynchronous training: the rollouts of up to `N` later steps run while a step trains and syncs (0: strictly on-policy)"},
		&cli.StringFlag{Name: "partial-rollouts", Usage: "asynchronous training: the rollouts in flight at a weight update `continue` on the new weights (the default; each turn keeps the version that served it) or restart at the new version"},
		&cli.StringFlag{Name: "stale-policy", Usage: "asynchronous training: a query whose samples are more than --max-staleness versions behind their trainer is dropped from that role's batch (`drop`, the default) or trained (keep); counted either way"},
		&cli.BoolFlag{Name: "stream-groups", Usage: "asynchronous training: a step is the first --batch-size groups whose rollouts are all in, so it never waits for its slowest rollout (each group still trains within --max-staleness steps); with --drop-zero-variance, groups of equal rewards are replaced by further draws"},
		&cli.IntFlag{Name: "max-extra-draws", Usage: "--stream-groups --drop-zero-variance: the groups of equal rewards a step replaces by further draws, at most `N` (0: the batch size)"},
		&cli.StringFlag{Name: "role", Usage: "decoupled mode: planner (rollouts and the planner's training) or executor (the executors' training, following the run through --store); empty: both here"},
	}
}

// overlayTrainFlags writes the train flags set on the command line over cfg.
func overlayTrainFlags(c *cli.Context, cfg *run.Config) {
	t := &cfg.Train
	for name, dst := range map[string]*string{"role": &t.Role, "planner-trainer": &t.PlannerTrainer, "executor-trainer": &t.ExecutorTrainer,
		"base-model-planner": &t.BaseModelPlanner, "base-model-executor": &t.BaseModelExecutor, "loss": &t.Loss,
		"weight-sync": &t.WeightSync, "weights-path": &t.WeightsPath, "weight-update-path": &t.VLLMUpdatePath,
		"weight-update-body": &t.VLLMUpdateBody, "weight-version-path": &t.VersionPath,
		"partial-rollouts": &t.PartialRollouts, "stale-policy": &t.StalePolicy} {
		if c.IsSet(name) {
			*dst = c.String(name)
		}
	}
	for name, dst := range map[string]*float64{"clip-low": &t.ClipLow, "clip-high": &t.ClipHigh, "lr": &t.LearningRate} {
		if c.IsSet(name) {
			*dst = c.Float64(name)
		}
	}
	if c.IsSet("weight-update-command") {
		t.VLLMUpdateCommand = c.StringSlice("weight-update-command")
	}
	if c.IsSet("lora-rank") {
		t.LoRARank = c.Int("lora-rank")
	}
	if c.IsSet("max-staleness") {
		t.MaxStaleness = c.Int("max-staleness")
	}
	if c.IsSet("stream-groups") {
		t.StreamGroups = c.Bool("stream-groups")
	}
	if c.IsSet("max-extra-draws") {
		t.MaxExtraDraws = c.Int("max-extra-draws")
	}
}

// runTrain is the action of `mgrpo train`.
func runTrain(c *cli.Context) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	overlayTrainFlags(c, &cfg)
	run.ApplySimTraining(&cfg)
	if cfg.Train.Role == string(rollout.RoleExecutor) {
		return runExecutorSide(c, cfg)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("train %w", err)
	}
	if err := cfg.CheckTraining(); err != nil {
		return err
	}
	return executeRun(c.Context, cfg, runOptions{resume: c.Bool("resume"), train: true}, c.String("metrics-addr"), loggerOf(c), c.App.Writer, consoleOf(c))
}

// runExecutorSide is `mgrpo train --role executor`: the executors' side of
// a decoupled run, following the run the planner side records in the
// store (--store, or the sqlite store of --out).
func runExecutorSide(c *cli.Context, flags run.Config) error {
	ctx, logger := c.Context, loggerOf(c)
	if flags.Store == "" && flags.Out == "" || flags.Store == run.StoreNone {
		return usageError{errors.New("--role executor: name the run's store with --store (or the planner side's --out for its sqlite store)")}
	}
	if err := run.CheckStoreURL(flags.Store); err != nil {
		return usageError{fmt.Errorf("--store %w", err)}
	}
	st, err := run.OpenStore(ctx, flags, os.Getenv)
	if err != nil {
		return err
	}
	defer st.Close()
	rec, err := findRun(ctx, st, flags.Run)
	if err != nil {
		return err
	}
	spec, err := farm.ReadRunSpec(rec)
	if err != nil {
		return err
	}
	cfg, err := run.ConfigFromRunRecord(spec.Config)
	if err != nil {
		return err
	}
	// The staleness bound and policy are the run's, as its planner side
	// recorded them.
	recorded := cfg.Train
	cfg.Run, cfg.Train, cfg.Store, cfg.Out = rec.ID, flags.Train, flags.Store, flags.Out
	if !c.IsSet("max-staleness") {
		// So that this side's syncs pause as the run's asynchrony needs.
		cfg.Train.MaxStaleness = recorded.MaxStaleness
	}
	if err := cfg.CheckTraining(); err != nil {
		return err
	}
	states, err := farm.TrainerStatesToResume(ctx, st, rec.ID, []rollout.Role{rollout.RoleExecutor})
	if err != nil {
		return fmt.Errorf("the executor trainer's saved state: %w", err)
	}
	training, err := run.BuildTraining(ctx, cfg, states)
	if err != nil {
		return err
	}
	defer training.Close()
	steps := 0
	if c.IsSet("steps") {
		steps = c.Int("steps")
	}
	return farm.TrainSide(ctx, farm.SideConfig{Store: st, Run: rec.ID, Role: rollout.RoleExecutor,
		Trainer: training.Trainers[rollout.RoleExecutor], Syncer: training.Syncers[rollout.RoleExecutor], Steps: steps,
		MaxStaleness: cfg.Train.MaxStaleness, StalePolicy: farm.StalePolicy(recorded.StalePolicy), Logger: logger})
}
