package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/run"
)

// rescoreCommand recomputes a recorded run with new reward settings.
func rescoreCommand() *cli.Command {
	var flags []cli.Flag
	for _, f := range configFlags(run.ScopeAgent, run.ScopeFarm) {
		if slices.Contains(run.RescoreFlags, f.Names()[0]) {
			flags = append(flags, f)
		}
	}
	flags = append([]cli.Flag{
		&cli.PathFlag{Name: "out", Usage: "the new run's `DIR` (must not exist, or be empty)", Required: true},
		&cli.PathFlag{Name: "config", Usage: "YAML `FILE` whose rewards.*, dbar, drop_zero_variance and judge.* keys replace the run's (flags override it)"},
		&cli.StringFlag{Name: "store", Usage: "the recorded run's store `URL` as the run used it (redis://HOST:PORT/DB[?prefix=P], rediss://…, sqlite://PATH; password from MGRPO_STORE_PASSWORD); default RUN_DIR/store.db. Only read"},
	}, flags...)
	return &cli.Command{
		Name:      "rescore",
		Usage:     "recompute a recorded run's rewards, advantages, alignment and samples with new reward, judge and d̄ settings, without rollouts",
		ArgsUsage: "RUN_DIR --out NEW_DIR",
		Description: "Reads RUN_DIR's rollouts.jsonl, samples and store, and writes NEW_DIR as a normal run directory:\n" +
			"the same rollouts with new rewards (rewards.* from --config), a new --dbar, --drop-zero-variance,\n" +
			"--expert-fallback, and with --judge-url/--judge-model a judge asked again (its answers cached in\n" +
			"NEW_DIR's store). No model is called but the judge. NEW_DIR/rescore.jsonl and the table printed\n" +
			"say, per step, how many groups changed the sign of an advantage or became zero-variance, and the\n" +
			"mean |Δ advantage| per role. Unchanged settings give byte-identical sample files.",
		Flags: flags,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("rescore takes one run directory (mgrpo rescore RUN_DIR --out NEW_DIR)")
			}
			settings := func(cfg run.Config) (run.Config, error) {
				if p := c.Path("config"); p != "" {
					file, err := run.LoadConfig(p)
					if err != nil {
						return cfg, err
					}
					run.RescoreSettings(&cfg, file)
				}
				return cfg, overlayConfigFlags(c, &cfg)
			}
			res, err := run.Rescore(c.Context, run.RescoreOptions{From: c.Args().First(), Out: c.Path("out"), Store: c.String("store"),
				Settings: settings, Hooks: run.Hooks{Logger: loggerOf(c)}})
			if err != nil {
				return err
			}
			writeRescoreTable(c.App.Writer, res)
			return nil
		},
	}
}

// writeRescoreTable prints what a rescore changed, step by step.
func writeRescoreTable(w io.Writer, res run.RescoreResult) {
	fmt.Fprintf(w, "%-5s %-6s %-9s", "step", "groups", "dbar")
	roles := []rollout.Role{rollout.RolePlanner, rollout.RoleExecutor}
	for _, r := range roles {
		fmt.Fprintf(w, " %-36s", string(r)+": sign±  →zero-var  mean|Δadv|")
	}
	fmt.Fprintln(w)
	for _, s := range res.Steps {
		dbar := fmt.Sprintf("%d→%d", s.WasDBar, s.DBar)
		fmt.Fprintf(w, "%-5d %-6d %-9s", s.Step, s.Groups, dbar)
		for _, r := range roles {
			ch, ok := s.Roles[r]
			if !ok {
				fmt.Fprintf(w, " %-36s", "-")
				continue
			}
			fmt.Fprintf(w, " %-36s", rescoreCell(ch))
		}
		fmt.Fprintln(w)
	}
	excluded, steps := 0, 0
	for _, s := range res.Steps {
		if s.Excluded > 0 {
			excluded += s.Excluded
			steps++
		}
	}
	if excluded > 0 {
		fmt.Fprintf(w, "%d groups the run excluded (infra failures) stay excluded, in %d steps (excluded_groups in %s)\n", excluded, steps, run.RescoreChangesFile)
	}
	fmt.Fprintf(w, "%d rollouts rescored in %.2fs; judge: %d answers asked, %d from the cache\n", res.Rollouts, res.Seconds, res.JudgeCalls, res.JudgeCached)
}

func rescoreCell(ch run.RoleChanges) string {
	return strings.TrimSpace(fmt.Sprintf("%14d %9d %11.4f", ch.SignChanged, ch.BecameZeroVariance, ch.MeanAbsDelta))
}
