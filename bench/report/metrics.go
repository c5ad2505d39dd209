// Package report turns results.jsonl into metrics (Avg Pass@1 with its spread across runs, Pass@k,
// Best Pass@1, majority vote, error counts), broken down by category, and writes summary.json,
// report.md and an SVG chart; it also compares two eval directories.
package report

import (
	"math"
	"sort"
	"strings"

	"github.com/mgrpo/mgrpo/bench"
)

// Metrics summarises a set of results.
//
// Accuracy denominators count every result, so agent errors and judge errors lower accuracy like
// wrong answers do, but they are reported in their own counts (Errors, JudgeErrors), never as Wrong.
type Metrics struct {
	Questions int `json:"questions"`
	Runs      int `json:"runs"`
	Results   int `json:"results"`
	// PerRun is each run's accuracy (correct / results of that run), in run order.
	PerRun []float64 `json:"per_run_accuracy"`
	// AvgPass1 is the mean of PerRun; Std is its population standard deviation; Min and Max bound it.
	AvgPass1 float64 `json:"avg_pass_at_1"`
	Std      float64 `json:"pass_at_1_std"`
	Min      float64 `json:"pass_at_1_min"`
	Max      float64 `json:"pass_at_1_max"`
	// BestPass1 is the best single run's accuracy (equal to Max).
	BestPass1 float64 `json:"best_pass_at_1"`
	// PassK is the share of questions answered correctly in at least one of their K runs.
	PassK float64 `json:"pass_at_k"`
	K     int     `json:"k"`
	// MajorityVote is the share of questions whose most frequent scored prediction (see VoteKey) was
	// judged correct; ties go to the prediction seen in the earliest run.
	MajorityVote float64 `json:"majority_vote"`

	Correct     int `json:"correct"`
	Wrong       int `json:"wrong"`
	Errors      int `json:"errors"`
	JudgeErrors int `json:"judge_errors"`

	MeanTurns       float64 `json:"mean_turns"`
	MeanDelegations float64 `json:"mean_delegations"`
	MeanToolCalls   float64 `json:"mean_tool_calls"`
	MeanTokens      float64 `json:"mean_tokens"`
	MeanLatency     float64 `json:"mean_latency_seconds"`
}

// VoteKey is the form predictions are compared in for the majority vote: trimmed, lowercased, with
// runs of whitespace collapsed.
func VoteKey(prediction string) string {
	return strings.Join(strings.Fields(strings.ToLower(prediction)), " ")
}

// Compute returns the metrics of results (any mix of questions and runs).
func Compute(results []bench.Result) Metrics {
	var m Metrics
	m.Results = len(results)
	if len(results) == 0 {
		return m
	}
	type runCount struct{ correct, total int }
	runs := map[int]*runCount{}
	byQ := map[string][]bench.Result{}
	var qOrder []string
	var turns, deleg, tools, tokens, latency float64
	for _, r := range results {
		rc := runs[r.Run]
		if rc == nil {
			rc = &runCount{}
			runs[r.Run] = rc
		}
		rc.total++
		switch r.Outcome() {
		case bench.OutcomeCorrect:
			m.Correct++
			rc.correct++
		case bench.OutcomeWrong:
			m.Wrong++
		case bench.OutcomeError:
			m.Errors++
		case bench.OutcomeJudgeError:
			m.JudgeErrors++
		}
		if _, ok := byQ[r.ID]; !ok {
			qOrder = append(qOrder, r.ID)
		}
		byQ[r.ID] = append(byQ[r.ID], r)
		turns += float64(r.Turns)
		deleg += float64(r.Delegations)
		tools += float64(r.ToolCalls)
		tokens += float64(r.PromptTokens + r.CompletionTokens)
		latency += r.LatencySeconds
	}
	n := float64(len(results))
	m.MeanTurns, m.MeanDelegations, m.MeanToolCalls = turns/n, deleg/n, tools/n
	m.MeanTokens, m.MeanLatency = tokens/n, latency/n

	runIDs := make([]int, 0, len(runs))
	for id := range runs {
		runIDs = append(runIDs, id)
	}
	sort.Ints(runIDs)
	m.Runs, m.K = len(runIDs), len(runIDs)
	m.Min = math.Inf(1)
	for _, id := range runIDs {
		acc := float64(runs[id].correct) / float64(runs[id].total)
		m.PerRun = append(m.PerRun, acc)
		m.AvgPass1 += acc
		m.Min = math.Min(m.Min, acc)
		m.Max = math.Max(m.Max, acc)
	}
	m.AvgPass1 /= float64(len(runIDs))
	for _, acc := range m.PerRun {
		m.Std += (acc - m.AvgPass1) * (acc - m.AvgPass1)
	}
	m.Std = math.Sqrt(m.Std / float64(len(runIDs)))
	m.BestPass1 = m.Max

	m.Questions = len(qOrder)
	var anyCorrect, voteCorrect int
	for _, id := range qOrder {
		rs := byQ[id]
		for _, r := range rs {
			if r.Outcome() == bench.OutcomeCorrect {
				anyCorrect++
				break
			}
		}
		if majorityCorrect(rs) {
			voteCorrect++
		}
	}
	m.PassK = float64(anyCorrect) / float64(m.Questions)
	m.MajorityVote = float64(voteCorrect) / float64(m.Questions)
	return m
}

// majorityCorrect reports whether the most frequent scored prediction of one question's results was
// judged correct. Results without a verdict (errors, judge errors) do not vote.
func majorityCorrect(rs []bench.Result) bool {
	sorted := append([]bench.Result(nil), rs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Run < sorted[j].Run })
	votes := map[string]int{}
	first := map[string]bench.Result{}
	var order []string
	for _, r := range sorted {
		if o := r.Outcome(); o != bench.OutcomeCorrect && o != bench.OutcomeWrong {
			continue
		}
		k := VoteKey(r.Prediction)
		if _, ok := first[k]; !ok {
			first[k] = r
			order = append(order, k)
		}
		votes[k]++
	}
	best, bestVotes := "", 0
	for _, k := range order {
		if votes[k] > bestVotes {
			best, bestVotes = k, votes[k]
		}
	}
	return bestVotes > 0 && first[best].Correct
}
