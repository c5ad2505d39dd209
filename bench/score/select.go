package score

import (
	"fmt"

	"github.com/mgrpo/mgrpo/bench"
)

// Scoring methods accepted by ForBenchmark.
const (
	Auto        = "auto"
	Exact       = "exact"
	JudgeOnly   = "judge"
	CascadeMode = "cascade"
)

// ForBenchmark returns the scorer for a benchmark and method. Auto picks the published protocol:
// GAIA's question_scorer for gaia; the Correct/Incorrect judge for webwalkerqa; xbench's exact match
// then Chinese judge for xbench; for jsonl the GAIA scorer, cascading to the Correct/Incorrect judge
// when a judge model is given. Exact, judge and cascade force that method with the benchmark's own
// exact step and judge. Methods that need a judge fail when m is nil.
func ForBenchmark(benchmark, method string, m ChatModel) (Scorer, error) {
	if method == "" {
		method = Auto
	}
	exact, judge := GAIAExact, Scorer(nil)
	switch benchmark {
	case bench.GAIA, bench.WebWalkerQA, bench.JSONL:
		if m != nil {
			judge = NewCorrectIncorrectJudge(m)
		}
	case bench.XBench:
		exact = XBenchExact
		if m != nil {
			judge = NewXBenchJudge(m)
		}
	default:
		return nil, fmt.Errorf("unsupported benchmark %q", benchmark)
	}
	if method == Auto {
		switch benchmark {
		case bench.GAIA:
			method = Exact
		case bench.WebWalkerQA:
			method = JudgeOnly
		case bench.XBench:
			method = CascadeMode
		case bench.JSONL:
			method = Exact
			if m != nil {
				method = CascadeMode
			}
		}
	}
	switch method {
	case Exact:
		return exact, nil
	case JudgeOnly, CascadeMode:
		if judge == nil {
			return nil, fmt.Errorf("scoring %s with %q needs a judge model", benchmark, method)
		}
		if method == JudgeOnly {
			return judge, nil
		}
		return Cascade(exact, judge), nil
	default:
		return nil, fmt.Errorf("unsupported scoring method %q", method)
	}
}
