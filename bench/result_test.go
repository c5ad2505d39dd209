package bench

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

func TestResultJSONKeys(t *testing.T) {
	r := Result{ID: "q", Benchmark: GAIA, Run: 1, Prediction: "p", Correct: true, Method: "exact",
		JudgeOutput: []string{"Correct"}, JudgeError: "e", Turns: 1, Delegations: 1, ToolCalls: 1,
		PromptTokens: 1, CompletionTokens: 1, LatencySeconds: 1, Error: "x", Level: "1", Type: "t",
		Difficulty: "d", Lang: "en", Domain: "dm", Hash: "h"}
	var buf bytes.Buffer
	if err := WriteResult(&buf, r); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := "benchmark completion_tokens correct delegations difficulty domain error hash id judge_error judge_output lang latency_seconds level method prediction prompt_tokens run tool_calls turns type"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("keys = %s\nwant   %s", got, want)
	}
	back, err := ReadResults(&buf, "buf")
	if err != nil || len(back) != 1 || back[0].Hash != "h" {
		t.Errorf("round trip = %+v, %v", back, err)
	}
}

func TestOutcomePrecedence(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want Outcome
	}{
		{Result{Correct: true}, OutcomeCorrect},
		{Result{}, OutcomeWrong},
		{Result{Error: "x", Correct: true}, OutcomeError},
		{Result{JudgeError: "x"}, OutcomeJudgeError},
		{Result{Error: "x", JudgeError: "y"}, OutcomeError},
	} {
		if got := tc.r.Outcome(); got != tc.want {
			t.Errorf("Outcome(%+v) = %v, want %v", tc.r, got, tc.want)
		}
	}
}

func TestItemHash(t *testing.T) {
	a := Item{Question: "q", Answer: "a"}
	b := Item{Question: "q", Answer: "b"}
	if a.Hash() == b.Hash() || len(a.Hash()) != 16 {
		t.Errorf("hashes %s %s", a.Hash(), b.Hash())
	}
	if r := ResultFor(a, 2); r.Hash != a.Hash() || r.Run != 2 {
		t.Errorf("ResultFor = %+v", r)
	}
}
