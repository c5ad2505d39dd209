package report

import (
	"sort"

	"github.com/mgrpo/mgrpo/bench"
)

// Summary is the content of summary.json.
type Summary struct {
	// Benchmark is the benchmark of the results when they all share one, else empty.
	Benchmark  string      `json:"benchmark,omitempty"`
	Overall    Metrics     `json:"overall"`
	Breakdowns []Breakdown `json:"breakdowns,omitempty"`
}

// Breakdown splits the results along one dimension.
type Breakdown struct {
	// Dimension is "level" (GAIA), "type×difficulty" (WebWalkerQA) or "lang".
	Dimension string  `json:"dimension"`
	Groups    []Group `json:"groups"`
}

// Group is the metrics of the results sharing one category value.
type Group struct {
	Key     string  `json:"key"`
	Metrics Metrics `json:"metrics"`
}

// dimensions lists the breakdowns and how a result's key is read; a dimension is reported only when
// some result has a non-empty key for it.
var dimensions = []struct {
	name string
	key  func(bench.Result) string
}{
	{"level", func(r bench.Result) string { return r.Level }},
	{"type×difficulty", func(r bench.Result) string {
		if r.Type == "" && r.Difficulty == "" {
			return ""
		}
		return orNone(r.Type) + "/" + orNone(r.Difficulty)
	}},
	{"lang", func(r bench.Result) string { return r.Lang }},
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Summarize computes the overall metrics and the breakdowns of results. Results with an empty key
// in a reported dimension form the group "(none)".
func Summarize(results []bench.Result) Summary {
	s := Summary{Overall: Compute(results)}
	for i, r := range results {
		if i == 0 {
			s.Benchmark = r.Benchmark
		} else if r.Benchmark != s.Benchmark {
			s.Benchmark = ""
			break
		}
	}
	for _, d := range dimensions {
		groups := map[string][]bench.Result{}
		present := false
		for _, r := range results {
			k := d.key(r)
			present = present || k != ""
			groups[orNone(k)] = append(groups[orNone(k)], r)
		}
		if !present {
			continue
		}
		keys := make([]string, 0, len(groups))
		for k := range groups {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b := Breakdown{Dimension: d.name}
		for _, k := range keys {
			b.Groups = append(b.Groups, Group{Key: k, Metrics: Compute(groups[k])})
		}
		s.Breakdowns = append(s.Breakdowns, b)
	}
	return s
}
