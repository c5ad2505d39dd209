package evalrun

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
	"github.com/mgrpo/mgrpo/bench/report"
	"github.com/mgrpo/mgrpo/rollout"
)

// SpecKey is where a recorded eval keeps its spec in its recording
// (beside the recording's own replay/… entries, with their lifetime).
const SpecKey = "replay/eval/spec"

// Spec is what `mgrpo eval --record` keeps of the eval itself, so
// that a replay reruns the same pairs with the same scorer: the run's
// configuration (as a run record holds it, after the simulated world, if
// any, filled in its endpoints and models), the benchmark, where its data
// came from and which items it held. The items' text is not kept (xbench
// keeps its text out of the eval's folder): a replay reads the data
// again and checks it against the items' hashes.
type Spec struct {
	Config    json.RawMessage `json:"config"`
	Benchmark string          `json:"benchmark"`
	// Data is the --data path (absolute), "" when the sim wrote the
	// questions into the eval's folder at SimData (relative).
	Data    string       `json:"data,omitempty"`
	SimData string       `json:"sim_data,omitempty"`
	Scorer  string       `json:"scorer"`
	Runs    int          `json:"runs"`
	Filter  bench.Filter `json:"filter"`
	Items   []SpecItem   `json:"items"`
}

// SpecItem identifies one item of a recorded eval.
type SpecItem struct {
	ID   string `json:"id"`
	Hash string `json:"hash"`
}

// RecordSpec keeps the eval's spec in its recording, with the ids and
// hashes of its items.
func RecordSpec(ctx context.Context, kv replay.KV, spec Spec, items []bench.Item) error {
	for _, it := range items {
		spec.Items = append(spec.Items, SpecItem{ID: it.ID, Hash: it.Hash()})
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("--record: encode the eval's spec: %w", err)
	}
	if err := kv.Set(ctx, SpecKey, b, replay.TTL); err != nil {
		return fmt.Errorf("--record: keep the eval's spec: %w", err)
	}
	return nil
}

// Replayed is what the replay of an eval did.
type Replayed struct {
	Benchmark string
	// Pairs counts the (item, run) pairs replayed.
	Pairs int
	// Misses are the requests the recording did not hold, the first of
	// each pair, in item and run order.
	Misses []ReplayMiss
}

// ReplayMiss is a request of an eval the recording did not hold,
// located by the benchmark item and the run index (a tool call's miss
// has neither: Item is then empty and Run -1).
type ReplayMiss struct {
	replay.Miss
	Item string `json:"item"`
	Run  int    `json:"run"`
}

// IsEvalDir reports whether dir is an eval's folder (results.jsonl, no
// step summaries) rather than a run's.
func IsEvalDir(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, rollout.SummaryFile)); err == nil {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, report.ResultsFile))
	return err == nil
}

// RecordedItems reads a recorded eval's items again (the sim's
// questions from its folder, else its --data) and checks them against the
// recorded ids and hashes.
func RecordedItems(from string, spec Spec) ([]bench.Item, error) {
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

// InRecordedOrder rewrites the replayed results.jsonl at path with its
// lines in the order of the recorded one's pairs; pairs the recording did
// not list keep their order, after them.
func InRecordedOrder(path string, recorded []byte) error {
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

// LocateMisses keeps the first miss of each pair, located by item and
// run from its trajectory (PairKey and the agent's place), in
// item and run order; tool calls' misses, which name no pair, follow.
func LocateMisses(ms []replay.Miss, items []bench.Item) []ReplayMiss {
	order := make(map[string]int, len(items))
	for i, it := range items {
		order[it.ID] = i
	}
	var out []ReplayMiss
	seen := map[string]bool{}
	for _, m := range ms {
		r := ReplayMiss{Miss: m, Run: -1}
		r.Item, r.Run = pairOfTrajectory(m.Trajectory, order)
		id := r.Item + "\x00" + strconv.Itoa(r.Run)
		if r.Item != "" && seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b ReplayMiss) int {
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
