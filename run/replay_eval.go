package run

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mgrpo/mgrpo/agents/replay"
	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/datasets"
	"github.com/mgrpo/mgrpo/bench/evalrun"
	"github.com/mgrpo/mgrpo/bench/report"
	"github.com/mgrpo/mgrpo/bench/score"
	"github.com/mgrpo/mgrpo/rollout"
)

// evalSpecKey is where a recorded eval keeps its spec in its recording
// (beside the recording's own replay/… entries, with their lifetime).
const evalSpecKey = "replay/eval/spec"

// evalSpec is what `mgrpo eval --record` keeps of the eval itself, so
// that a replay reruns the same pairs with the same scorer: the run's
// configuration (as a run record holds it, after the simulated world, if
// any, filled in its endpoints and models), the benchmark, where its data
// came from and which items it held. The items' text is not kept (xbench
// keeps its text out of the eval's folder): a replay reads the data
// again and checks it against the items' hashes.
type evalSpec struct {
	Config    json.RawMessage `json:"config"`
	Benchmark string          `json:"benchmark"`
	// Data is the --data path (absolute), "" when the sim wrote the
	// questions into the eval's folder at SimData (relative).
	Data    string       `json:"data,omitempty"`
	SimData string       `json:"sim_data,omitempty"`
	Scorer  string       `json:"scorer"`
	Runs    int          `json:"runs"`
	Filter  bench.Filter `json:"filter"`
	Items   []evalItem   `json:"items"`
}

// evalItem identifies one item of a recorded eval.
type evalItem struct {
	ID   string `json:"id"`
	Hash string `json:"hash"`
}

// recordEvalSpec keeps the eval's spec in its recording.
func recordEvalSpec(ctx context.Context, kv replay.KV, cfg Config, opts EvalOptions, simData string, items []bench.Item) error {
	raw, err := cfg.RunRecordConfig()
	if err != nil {
		return err
	}
	spec := evalSpec{Config: raw, Benchmark: opts.Benchmark, SimData: filepath.ToSlash(simData), Scorer: opts.Scorer, Runs: opts.Runs, Filter: opts.Filter}
	if opts.Data != "" {
		if spec.Data, err = filepath.Abs(opts.Data); err != nil {
			return fmt.Errorf("--record: %w", err)
		}
	}
	for _, it := range items {
		spec.Items = append(spec.Items, evalItem{ID: it.ID, Hash: it.Hash()})
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("--record: encode the eval's spec: %w", err)
	}
	if err := kv.Set(ctx, evalSpecKey, b, replay.TTL); err != nil {
		return fmt.Errorf("--record: keep the eval's spec: %w", err)
	}
	return nil
}

// EvalReplay is what the replay of an eval did.
type EvalReplay struct {
	Benchmark string
	// Pairs counts the (item, run) pairs replayed.
	Pairs int
	// Misses are the requests the recording did not hold, the first of
	// each pair, in item and run order.
	Misses []EvalReplayMiss
}

// EvalReplayMiss is a request of an eval the recording did not hold,
// located by the benchmark item and the run index (a tool call's miss
// has neither: Item is then empty and Run -1).
type EvalReplayMiss struct {
	replay.Miss
	Item string `json:"item"`
	Run  int    `json:"run"`
}

// isEvalDir reports whether dir is an eval's folder (results.jsonl, no
// step summaries) rather than a run's.
func isEvalDir(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, rollout.SummaryFile)); err == nil {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, report.ResultsFile))
	return err == nil
}

// replayEval is Replay of an eval recorded with `mgrpo eval --record`:
// the same pairs, the agents and the judge answered from the recording,
// written into opts.Out as the eval wrote them (results.jsonl in the
// recorded eval's line order, since pairs finish in whatever order they
// run in). The latency fields are the replay's own wall-clock.
func replayEval(ctx context.Context, opts ReplayOptions) (ReplayResult, error) {
	logger := opts.logger()
	if err := checkNewDir("replay", opts.Out); err != nil {
		return ReplayResult{}, invalid(err)
	}
	noRecording := invalid(fmt.Errorf("replay: the eval in %s holds no recording (run mgrpo eval with --record to replay it)", opts.From))
	if _, err := os.Stat(filepath.Join(opts.From, StoreFile)); err != nil {
		return ReplayResult{}, noRecording
	}
	src := &recordedStore{}
	defer src.close()
	if err := src.openCopy(ctx, filepath.Join(opts.From, StoreFile), filepath.Join(opts.From, StoreFile)); err != nil {
		return ReplayResult{}, err
	}
	raw, ok, err := src.st.Get(ctx, evalSpecKey)
	if err != nil {
		return ReplayResult{}, invalid(fmt.Errorf("replay: %s: the eval's store cannot be read: %w", opts.From, err))
	}
	if has, herr := replay.HasRecording(ctx, src.st); herr != nil || !has {
		return ReplayResult{}, noRecording
	}
	if !ok {
		return ReplayResult{}, invalid(fmt.Errorf("replay: the eval in %s was recorded by an mgrpo that did not keep the eval's spec in its recording: run it again with --record", opts.From))
	}
	var spec evalSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return ReplayResult{}, invalid(fmt.Errorf("replay: %s: the eval's recorded spec: %w", opts.From, err))
	}
	cfg, err := ConfigFromRunRecord(spec.Config)
	if err != nil {
		return ReplayResult{}, invalid(fmt.Errorf("replay %s: %w", opts.From, err))
	}
	if cfg.Gateway.Enabled() {
		return ReplayResult{}, invalid(fmt.Errorf("replay: %s is an eval of the gateway's external agents: their code is not ours to rerun", opts.From))
	}
	items, err := recordedEvalItems(opts.From, spec)
	if err != nil {
		return ReplayResult{}, invalid(err)
	}
	recordedLines, err := os.ReadFile(filepath.Join(opts.From, report.ResultsFile))
	if err != nil {
		return ReplayResult{}, invalid(fmt.Errorf("replay: %w", err))
	}
	overridePrompts(&cfg, opts.Prompts)
	defaults := DefaultConfig()
	getenv := SimGetenv(cfg.Sim)
	cfg.Sim, cfg.Out, cfg.Record = false, opts.Out, false
	cfg.Concurrency, cfg.Grace = defaults.Concurrency, defaults.Grace

	player := replay.NewPlayer(src.st)
	mode, _ := rollout.ParseMode(cfg.Mode)
	stack, err := Build(ctx, cfg, Options{Single: mode == rollout.ModeSingle, Getenv: placeholderKeys(getenv), Logger: logger, Player: player})
	if err != nil {
		return ReplayResult{}, err
	}
	defer stack.Close()
	scorer, err := score.ForBenchmark(spec.Benchmark, spec.Scorer, stack.Judge)
	if err != nil {
		return ReplayResult{}, invalid(fmt.Errorf("replay %s: %w", opts.From, err))
	}
	ecfg := evalrun.Config{
		Benchmark: spec.Benchmark, Items: items, Runs: spec.Runs, Out: opts.Out, Agent: stack.Agent(), Scorer: scorer,
		Concurrency: cfg.Concurrency.Rollouts(), Seed: cfg.Seed, Grace: cfg.Grace.Duration, Logger: logger,
	}
	if err := ecfg.Validate(); err != nil {
		return ReplayResult{}, invalid(fmt.Errorf("replay %s: %w", opts.From, err))
	}
	if spec.SimData != "" {
		dst := filepath.Join(opts.Out, filepath.FromSlash(spec.SimData))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return ReplayResult{}, fmt.Errorf("replay: %w", err)
		}
		if err := copyIfPresent(filepath.Join(opts.From, filepath.FromSlash(spec.SimData)), dst); err != nil {
			return ReplayResult{}, err
		}
	}
	out, runErr := evalrun.Run(ctx, ecfg)
	if runErr == nil {
		runErr = inRecordedOrder(filepath.Join(opts.Out, report.ResultsFile), recordedLines)
	}
	ev := &EvalReplay{Benchmark: spec.Benchmark, Pairs: out.Ran, Misses: locateEvalMisses(player.Misses(), items)}
	res := ReplayResult{Calls: player.Calls(), Eval: ev}
	if err := writeJSONLines(filepath.Join(opts.Out, ReplayMissesFile), ev.Misses); err != nil {
		return res, err
	}
	if runErr != nil {
		return res, fmt.Errorf("replay of the eval stopped: %w", runErr)
	}
	logger.Info("replayed", "from", opts.From, "out", opts.Out, "pairs", ev.Pairs, "calls", res.Calls, "misses", len(ev.Misses))
	return res, nil
}

// recordedEvalItems reads a recorded eval's items again (the sim's
// questions from its folder, else its --data) and checks them against the
// recorded ids and hashes.
func recordedEvalItems(from string, spec evalSpec) ([]bench.Item, error) {
	data := spec.Data
	if spec.SimData != "" {
		data = filepath.Join(from, filepath.FromSlash(spec.SimData))
	}
	items, err := datasets.Load(spec.Benchmark, data, spec.Filter)
	if err != nil {
		return nil, fmt.Errorf("replay: the eval's data: %w", err)
	}
	if len(items) != len(spec.Items) {
		return nil, fmt.Errorf("replay: the eval's data %s holds %d items under the eval's filter, the eval ran %d: it changed since", data, len(items), len(spec.Items))
	}
	for i, it := range items {
		if want := spec.Items[i]; it.ID != want.ID || it.Hash() != want.Hash {
			return nil, fmt.Errorf("replay: the eval's data %s changed since the eval: item %d is %s (hash %s), the eval ran %s (hash %s)", data, i, it.ID, it.Hash(), want.ID, want.Hash)
		}
	}
	return items, nil
}

// inRecordedOrder rewrites the replayed results.jsonl at path with its
// lines in the order of the recorded one's pairs; pairs the recording did
// not list keep their order, after them.
func inRecordedOrder(path string, recorded []byte) error {
	pairOf := func(line []byte) string {
		var r struct {
			ID  string `json:"id"`
			Run int    `json:"run"`
		}
		if json.Unmarshal(line, &r) != nil {
			return ""
		}
		return r.ID + "\x00" + strconv.Itoa(r.Run)
	}
	rank := map[string]int{}
	for _, l := range bytes.SplitAfter(recorded, []byte("\n")) {
		if k := pairOf(l); k != "" {
			if _, seen := rank[k]; !seen {
				rank[k] = len(rank)
			}
		}
	}
	body, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	lines := slices.DeleteFunc(bytes.SplitAfter(body, []byte("\n")), func(l []byte) bool { return len(bytes.TrimSpace(l)) == 0 })
	at := func(l []byte) int {
		if r, ok := rank[pairOf(l)]; ok {
			return r
		}
		return len(rank)
	}
	slices.SortStableFunc(lines, func(a, b []byte) int { return cmp.Compare(at(a), at(b)) })
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o644); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	return nil
}

// locateEvalMisses keeps the first miss of each pair, located by item and
// run from its trajectory (evalrun.PairKey and the agent's place), in
// item and run order; tool calls' misses, which name no pair, follow.
func locateEvalMisses(ms []replay.Miss, items []bench.Item) []EvalReplayMiss {
	order := make(map[string]int, len(items))
	for i, it := range items {
		order[it.ID] = i
	}
	var out []EvalReplayMiss
	seen := map[string]bool{}
	for _, m := range ms {
		r := EvalReplayMiss{Miss: m, Run: -1}
		r.Item, r.Run = pairOfTrajectory(m.Trajectory, order)
		id := r.Item + "\x00" + strconv.Itoa(r.Run)
		if r.Item != "" && seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b EvalReplayMiss) int {
		ia, aok := order[a.Item]
		ib, bok := order[b.Item]
		if aok != bok {
			if aok {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(ia, ib), cmp.Compare(a.Run, b.Run), cmp.Compare(a.Trajectory, b.Trajectory), cmp.Compare(a.Turn, b.Turn))
	})
	return out
}

// pairOfTrajectory returns the item and run of an eval trajectory key
// (eval/ID/RUN, then the agent's place); "" and -1 for another key. Ids
// may hold slashes: the longest id of the eval that fits wins.
func pairOfTrajectory(key string, items map[string]int) (string, int) {
	rest, ok := strings.CutPrefix(key, "eval/")
	if !ok {
		return "", -1
	}
	best, run := "", -1
	for i := 0; i < len(rest); i++ {
		if rest[i] != '/' {
			continue
		}
		id := rest[:i]
		if _, known := items[id]; !known || len(id) <= len(best) {
			continue
		}
		digits, _, _ := strings.Cut(rest[i+1:], "/")
		if n, err := strconv.Atoi(digits); err == nil && n >= 0 {
			best, run = id, n
		}
	}
	return best, run
}
