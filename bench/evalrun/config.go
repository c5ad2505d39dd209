// Package evalrun runs an agent over benchmark items, several times each, scores every answer and
// writes an eval directory: results.jsonl (one line per question per run, appended as each finishes),
// summary.json, report.md and the accuracy chart (see package report).
//
// A run is resumable: results.jsonl is the record of what is done, so a Run on a directory that already
// holds results skips the (item, run) pairs found there and runs the rest. Pairs run concurrently with
// a bound; an interrupted Run stops starting pairs, gives the ones in flight a grace period and keeps
// every line written.
//
// Sensitive items (xbench) never leave their text in the directory or the logs: see Redact.
package evalrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/score"
)

// Agent answers one question. *agents.Planner and *agents.Single satisfy it.
//
// Run always returns the rollout tree; a failure is recorded in its trajectories (the top
// trajectory's Error), never returned. It must be safe for concurrent use.
type Agent interface {
	Run(ctx context.Context, q agents.Query) *agents.Rollout
}

var (
	_ Agent = (*agents.Planner)(nil)
	_ Agent = (*agents.Single)(nil)
)

// Defaults applied to zero fields of Config.
const (
	DefaultConcurrency = 4
	DefaultGrace       = 30 * time.Second
)

// Config describes one eval.
type Config struct {
	// Benchmark names the benchmark (bench.GAIA, …); results of items without a Benchmark get it.
	// Empty means "take it from the items".
	Benchmark string
	// Items are the questions, in report order; ids must be unique.
	Items []bench.Item
	// Runs is how many times each item is run (k of Pass@k); at least 1.
	Runs int
	// Out is the eval directory, created when missing.
	Out string
	// Agent answers the questions.
	Agent Agent
	// Scorer decides whether an answer is right.
	Scorer score.Scorer
	// Concurrency bounds the pairs in flight; 0 means DefaultConcurrency.
	Concurrency int
	// Seed is the eval seed; each pair's agent seed is PairSeed(Seed, id, run).
	Seed uint64
	// Grace is how long pairs in flight may go on after the context is cancelled before they are
	// abandoned (and not written); 0 means DefaultGrace.
	Grace time.Duration
	// Logger receives progress and warnings (never question, answer or prediction text); nil
	// discards them.
	Logger *slog.Logger
	// OnProgress, when set, is called once when the pending pairs are known and after every pair
	// written. Calls never overlap.
	OnProgress func(Progress)
	// Replace lets an eval whose items or runs leave out pairs that Out's results.jsonl holds
	// rewrite the report over its own pairs (the lines are kept); without it Run refuses such an
	// eval with ErrNarrower (see CheckDir).
	Replace bool
}

// Progress is the state of an eval. Done, Correct, Errors and JudgeErrors count the pairs of the
// eval found in results.jsonl at the start (Resumed) and those finished since.
type Progress struct {
	Done, Total int
	Resumed     int
	Correct     int
	// Errors counts agent errors; JudgeErrors counts results without a verdict. Neither is a wrong
	// answer.
	Errors      int
	JudgeErrors int
	// Rate is the pairs finished per second by this Run (resumed pairs excluded).
	Rate    float64
	Elapsed time.Duration
}

// Validate reports every problem of c at once. It does not look at the output directory.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.Items) == 0 {
		add("no items to evaluate")
	}
	if c.Runs < 1 {
		add("runs %d: must be at least 1", c.Runs)
	}
	if c.Out == "" {
		add("no output directory")
	}
	if c.Agent == nil {
		add("no agent")
	}
	if c.Scorer == nil {
		add("no scorer")
	}
	if c.Concurrency < 0 {
		add("concurrency %d: must not be negative (0 means %d)", c.Concurrency, DefaultConcurrency)
	}
	if c.Grace < 0 {
		add("grace %v: must not be negative (0 means %v)", c.Grace, DefaultGrace)
	}
	seen := make(map[string]bool, len(c.Items))
	for i, it := range c.Items {
		switch {
		case it.ID == "":
			add("item %d: empty id", i)
		case seen[it.ID]:
			add("item %d: duplicate id %s", i, it.ID)
		}
		seen[it.ID] = true
		if c.Benchmark != "" && it.Benchmark != "" && it.Benchmark != c.Benchmark {
			add("item %s: benchmark %q, eval benchmark %q", it.ID, it.Benchmark, c.Benchmark)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("eval config: %w", err)
	}
	return nil
}

// withDefaults returns c with zero fields defaulted.
func (c Config) withDefaults() Config {
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
