package evalrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/report"
	"github.com/mgrpo/mgrpo/internal/pool"
)

// Outcome is what Run did.
type Outcome struct {
	// Summary covers the eval's pairs recorded in results.jsonl (all of them when Run returns nil);
	// it is also what summary.json holds.
	Summary report.Summary
	// Total is the number of pairs (items × runs). Resumed were found done in results.jsonl; Ran were
	// finished and written by this Run; Abandoned were in flight when the grace period ended (or
	// when results.jsonl could no longer be written) and are not recorded; NotStarted never started.
	Total, Resumed, Ran, Abandoned, NotStarted int
	// Foreign counts lines of results.jsonl that belong to no pair of this eval (other items, higher
	// runs, repeated pairs): they are kept in the file but left out of the summary.
	Foreign int
	// DroppedLine reports that a truncated last line of results.jsonl was dropped.
	DroppedLine bool
	Elapsed     time.Duration
}

type pairID struct {
	id  string
	run int
}

// Run evaluates cfg.Agent on every (item, run) pair not yet in cfg.Out/results.jsonl, appending one
// line per finished pair, then writes summary.json, report.md and the chart over the eval's pairs.
//
// Agent failures and judge failures are recorded in the results, not returned. Run returns an error
// for an invalid configuration, an unusable results.jsonl (a malformed line other than a truncated
// last one; a recorded pair whose item hash differs from the item's, i.e. another dataset), a write
// failure, or an interruption: when ctx is cancelled no new pair starts, pairs in flight get
// cfg.Grace to finish and are then abandoned, the report is written over what is recorded, and the
// error wraps ctx's error and cause. A later Run with the same configuration continues from there.
func Run(ctx context.Context, cfg Config) (Outcome, error) {
	if err := cfg.Validate(); err != nil {
		return Outcome{}, err
	}
	cfg = cfg.withDefaults()
	log := cfg.Logger
	start := time.Now()

	rl, prior, dropped, err := openResults(cfg.Out)
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{Total: len(cfg.Items) * cfg.Runs, DroppedLine: dropped}
	if dropped {
		log.Warn("dropped the truncated last line of results.jsonl", "path", rl.path)
	}
	done, foreign, err := recorded(cfg, prior)
	if err == nil {
		err = narrower(cfg, prior)
	}
	if err != nil {
		rl.close()
		return out, err
	}
	out.Foreign, out.Resumed = foreign, len(done)
	if foreign > 0 {
		log.Warn("results.jsonl holds lines outside this eval; kept, not summarised", "lines", foreign)
	}
	var todo []pair
	for _, it := range cfg.Items {
		for run := range cfg.Runs {
			if _, ok := done[pairID{it.ID, run}]; !ok {
				todo = append(todo, pair{item: it, run: run})
			}
		}
	}
	prog := Progress{Total: out.Total, Resumed: len(done)}
	for _, r := range done {
		prog.count(r)
	}
	log.Info("eval starting", "benchmark", cfg.Benchmark, "pairs", out.Total, "resumed", len(done),
		"to_run", len(todo), "concurrency", cfg.Concurrency, "out", cfg.Out)
	notify := func() {
		prog.Elapsed = time.Since(start)
		if s := prog.Elapsed.Seconds(); s > 0 {
			prog.Rate = float64(out.Ran) / s
		}
		if cfg.OnProgress != nil {
			cfg.OnProgress(prog)
		}
	}
	notify()

	writeErr := schedule(ctx, cfg, todo, rl, &out, func(r bench.Result) {
		done[pairID{r.ID, r.Run}] = r
		prog.count(r)
		notify()
	})
	if err := rl.close(); err != nil && writeErr == nil {
		writeErr = err
	}
	out.Elapsed = time.Since(start)

	results := ordered(cfg, done)
	if len(results) > 0 {
		out.Summary = report.Summarize(results)
		if err := report.WriteFiles(cfg.Out, out.Summary); err != nil && writeErr == nil {
			writeErr = err
		}
	}
	log.Info("eval finished", "done", len(done), "pairs", out.Total, "ran", out.Ran, "abandoned", out.Abandoned,
		"not_started", out.NotStarted, "avg_pass_at_1", out.Summary.Overall.AvgPass1, "elapsed", out.Elapsed.Round(time.Millisecond))
	switch {
	case writeErr != nil:
		return out, fmt.Errorf("eval: %w", writeErr)
	case len(done) < out.Total && ctx.Err() != nil:
		cause := context.Cause(ctx)
		if !errors.Is(cause, ctx.Err()) {
			cause = fmt.Errorf("%w: %w", ctx.Err(), cause)
		}
		return out, fmt.Errorf("eval interrupted with %d of %d pairs done (%d abandoned, %d not started): %w",
			len(done), out.Total, out.Abandoned, out.NotStarted, cause)
	}
	return out, nil
}

// count adds one recorded result to the counters.
func (p *Progress) count(r bench.Result) {
	p.Done++
	switch r.Outcome() {
	case bench.OutcomeCorrect:
		p.Correct++
	case bench.OutcomeError:
		p.Errors++
	case bench.OutcomeJudgeError:
		p.JudgeErrors++
	}
}

// recorded sorts the results found in results.jsonl into the eval's done pairs (the first line of a
// pair wins) and the count of the others. A pair recorded for different text is an error.
func recorded(cfg Config, prior []bench.Result) (map[pairID]bench.Result, int, error) {
	index := make(map[string]int, len(cfg.Items))
	for i, it := range cfg.Items {
		index[it.ID] = i
	}
	done := make(map[pairID]bench.Result, len(prior))
	foreign := 0
	for _, r := range prior {
		i, ok := index[r.ID]
		if !ok || r.Run < 0 || r.Run >= cfg.Runs {
			foreign++
			continue
		}
		if h := cfg.Items[i].Hash(); r.Hash != "" && r.Hash != h {
			return nil, 0, fmt.Errorf("resume: results.jsonl holds %s run %d for other text (hash %s, item hash %s): use another output directory",
				r.ID, r.Run, r.Hash, h)
		}
		k := pairID{r.ID, r.Run}
		if _, dup := done[k]; dup {
			foreign++
			continue
		}
		done[k] = r
	}
	return done, foreign, nil
}

// ordered returns the done results in item order, then run order, so that the summary does not
// depend on the order pairs finished in.
func ordered(cfg Config, done map[pairID]bench.Result) []bench.Result {
	out := make([]bench.Result, 0, len(done))
	for _, it := range cfg.Items {
		for run := range cfg.Runs {
			if r, ok := done[pairID{it.ID, run}]; ok {
				out = append(out, r)
			}
		}
	}
	return out
}

// schedule runs todo with cfg.Concurrency workers and writes each finished pair to rl from this
// goroutine, calling record after each line written. It returns the first write error; after one,
// nothing more is written and the pairs in flight are abandoned.
func schedule(ctx context.Context, cfg Config, todo []pair, rl *resultsLog, out *Outcome, record func(bench.Result)) error {
	work := pool.New(cfg.Concurrency).NewGroup(ctx, cfg.Grace, func(cause error) error {
		return fmt.Errorf("eval pairs abandoned after the %v grace period: %w", cfg.Grace, cause)
	})
	defer work.Close()
	type finished struct {
		res       bench.Result
		abandoned bool
	}
	results := make(chan finished)
	started := make(chan int, 1)
	// The feeder starts the pairs in order as slots free up, until the
	// eval is interrupted or stops writing; the results channel closes
	// once every pair started has returned.
	go func() {
		n := 0
		defer func() {
			work.Wait()
			close(results)
			started <- n
		}()
		for _, p := range todo {
			if work.Go(func(workCtx context.Context) {
				res, abandoned := evaluate(workCtx, cfg, p)
				results <- finished{res, abandoned}
			}) != nil {
				return
			}
			n++
		}
	}()

	log := cfg.Logger
	var writeErr error
	interrupted := ctx.Done()
	for {
		select {
		case f, ok := <-results:
			if !ok {
				out.NotStarted = len(todo) - <-started
				return writeErr
			}
			if f.abandoned || writeErr != nil {
				out.Abandoned++
				continue
			}
			if err := rl.append(f.res); err != nil {
				writeErr = err
				work.Abandon(err)
				out.Abandoned++
				log.Error("eval cannot record results; stopping", "err", err)
				continue
			}
			out.Ran++
			logResult(cfg, f.res)
			record(f.res)
		case <-interrupted:
			interrupted = nil
			log.Warn("eval interrupted: no new pairs; pairs in flight get a grace period", "grace", cfg.Grace, "cause", context.Cause(ctx))
		}
	}
}

// logResult logs one recorded pair by id and run only: question, answer and prediction never reach
// the log (error messages of sensitive items are already scrubbed).
func logResult(cfg Config, r bench.Result) {
	switch r.Outcome() {
	case bench.OutcomeError:
		cfg.Logger.Warn("eval pair failed", "id", r.ID, "run", r.Run, "err", r.Error)
	case bench.OutcomeJudgeError:
		cfg.Logger.Warn("eval pair has no verdict", "id", r.ID, "run", r.Run, "err", r.JudgeError)
	default:
		cfg.Logger.Debug("eval pair scored", "id", r.ID, "run", r.Run, "correct", r.Correct, "method", r.Method,
			"turns", r.Turns, "delegations", r.Delegations, "latency_seconds", r.LatencySeconds)
	}
}
