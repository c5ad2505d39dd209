package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/agents/llm"
	"github.com/mgrpo/mgrpo/bench/score"
	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/rollout/farm"
	"github.com/mgrpo/mgrpo/sim/web"
)

// simSearchKey is the API key sent to the simulated web's Serper-shaped
// search, which accepts any key.
const simSearchKey = "sim"

// executeRun builds the run from a validated configuration and runs the
// farm. Everything that can be checked is checked before the first rollout.
func executeRun(ctx context.Context, cfg runConfig, logger *slog.Logger, stdout, stderr io.Writer) error {
	if cfg.Run == "" {
		cfg.Run = filepath.Base(filepath.Clean(cfg.Out))
	}
	if err := checkOutDir(cfg.Out); err != nil {
		return usageError{err}
	}
	mode, err := rollout.ParseMode(cfg.Mode)
	if err != nil {
		return usageError{err}
	}
	dbar, err := rollout.ParseDBar(cfg.DBar)
	if err != nil {
		return usageError{err}
	}
	fallback, err := rollout.ParseExpertFallback(cfg.Rewards.ExpertFallback)
	if err != nil {
		return usageError{err}
	}
	weights := rollout.RewardWeights{Alpha1: cfg.Rewards.Alpha1, Alpha2: cfg.Rewards.Alpha2, Beta1: cfg.Rewards.Beta1, Beta2: cfg.Rewards.Beta2, Beta3: cfg.Rewards.Beta3}
	if err := weights.Validate(); err != nil {
		return usageError{fmt.Errorf("rewards: %w", err)}
	}
	world, getenv, err := openWorld(&cfg, logger)
	if err != nil {
		return err
	}
	if world != nil {
		defer world.close()
		if cfg.Tasks == "" {
			if cfg.Tasks, err = writeSimTasks(world, cfg.Out, "jsonl"); err != nil {
				return err
			}
		}
	}
	tasks, err := farm.LoadTasks(cfg.Tasks)
	if err != nil {
		return usageError{err}
	}
	st, err := buildAgents(ctx, cfg, mode == rollout.ModeSingle, true, getenv, logger)
	if err != nil {
		return err
	}
	defer st.close()

	var scorer score.Scorer = score.GAIAExact
	var expert rollout.ExpertJudge
	if st.judge != nil {
		scorer = score.Cascade(score.GAIAExact, score.NewCorrectIncorrectJudge(st.judge))
		expert = score.ExpertJudge{Model: st.judge}
		fmt.Fprintf(stderr, "r_correct: GAIA exact match, then the judge %s; r_expert: the judge's rating of each report\n", cfg.Judge.Model)
	} else {
		fmt.Fprintf(stderr, "r_correct: GAIA exact match (no judge); r_expert: %s\n", fallback.Describe())
	}

	progress := newProgressReporter(stderr, logger)
	farm, err := farm.New(farm.Config{
		Run: cfg.Run, Seed: cfg.Seed, Steps: cfg.Steps, BatchSize: cfg.BatchSize, GroupSize: cfg.GroupSize,
		Mode: mode, DBar: dbar, DropZeroVariance: cfg.DropZeroVariance, Weights: weights,
		Scorer: rolloutScorer{scorer}, Expert: expert, ExpertFallback: fallback,
		Concurrency: cfg.Concurrency, Runner: &farm.AgentRunner{Planner: st.planner, Single: st.single},
		Sink:  &rollout.DirSink{Dir: cfg.Out, Parquet: cfg.Format == "parquet"},
		Grace: cfg.Grace.Duration, Logger: logger, OnProgress: progress.report,
	}, tasks)
	if err != nil {
		return usageError{err}
	}
	start := time.Now()
	summaries, runErr := farm.Run(ctx)
	progress.done()
	if err := writeSummaries(cfg.Out, summaries); err != nil {
		return err
	}
	printSummaries(stdout, cfg.Out, summaries, time.Since(start))
	if runErr != nil {
		return fmt.Errorf("rollout stopped after %d of %d steps: %w", len(summaries), cfg.Steps, runErr)
	}
	return nil
}

// checkOutDir refuses an output directory that already holds steps: steps
// are never overwritten.
func checkOutDir(out string) error {
	entries, err := os.ReadDir(out)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("out %s: %w", out, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "step-") {
			return fmt.Errorf("out %s already holds %s: choose a new --out (steps are never overwritten)", out, e.Name())
		}
	}
	return nil
}

// writeSimTasks writes the sim web's questions into out in a task format
// (jsonl, gaia, webwalkerqa) and returns the file's path.
func writeSimTasks(w *simWorld, out, format string) (string, error) {
	dir := out
	name := "tasks.jsonl"
	if format == "gaia" {
		dir, name = filepath.Join(out, "data"), "metadata.jsonl"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("out: %w", err)
	}
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("write sim tasks: %w", err)
	}
	if err := web.WriteTasks(f, w.world.Questions, format); err != nil {
		f.Close()
		return "", fmt.Errorf("write sim tasks: %w", err)
	}
	return path, f.Close()
}

// preflight checks that every vLLM/SGLang endpoint answers /health before
// any rollout starts, so an unreachable server is reported up front.
func preflight(ctx context.Context, cfg runConfig, single bool) error {
	roles := []struct {
		name string
		e    endpointConfig
	}{{"executor", cfg.Executor}}
	if !single {
		roles = append(roles, struct {
			name string
			e    endpointConfig
		}{"planner", cfg.Planner})
	}
	client := &http.Client{Timeout: 5 * time.Second}
	var errs []error
	for _, r := range roles {
		if r.e.Dialect == llm.DialectOpenAI {
			continue // hosted APIs have no /health; the first call tells
		}
		for _, base := range r.e.URLs {
			u := strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/v1") + "/health"
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s endpoint %s: %w", r.name, redact.URL(base), err))
				continue
			}
			resp, err := client.Do(req)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s endpoint %s is unreachable: %w", r.name, redact.URL(base), unwrapURLError(err)))
				continue
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs = append(errs, fmt.Errorf("%s endpoint %s: /health answered %s", r.name, redact.URL(base), resp.Status))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("before starting:\n%w", err)
	}
	return nil
}

// writeSummaries writes one JSON line per completed step to
// OUT/summary.jsonl.
func writeSummaries(out string, summaries []rollout.StepSummary) error {
	if len(summaries) == 0 {
		return nil
	}
	var b strings.Builder
	for _, s := range summaries {
		line, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("summary: %w", err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	tmp := filepath.Join(out, ".summary.jsonl.tmp")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	return os.Rename(tmp, filepath.Join(out, "summary.jsonl"))
}

// rolloutScorer adapts a bench scorer to the farm's Scorer.
type rolloutScorer struct{ s score.Scorer }

func (r rolloutScorer) Score(ctx context.Context, question, prediction, gold string) (rollout.Verdict, error) {
	v, err := r.s.Score(ctx, score.Case{Question: question, Answer: gold, Prediction: prediction})
	out := rollout.Verdict{Method: v.Method, Raw: strings.Join(v.JudgeOutput, "\n---\n")}
	if v.Correct {
		out.Correct = 1
	}
	return out, err
}
