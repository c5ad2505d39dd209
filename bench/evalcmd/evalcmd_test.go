package evalcmd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/report"
)

// scriptJudge answers "Correct" when the prompt's prediction contains the word "right", a malformed
// reply when it contains "garble", and "Incorrect" otherwise.
type scriptJudge struct{}

func (scriptJudge) Complete(_ context.Context, _, user string) (string, error) {
	pred := user[strings.Index(user, "Predicted Answer:"):]
	switch {
	case strings.Contains(pred, "garble"):
		return "hmm", nil
	case strings.Contains(pred, "right"):
		return "Correct", nil
	}
	return "Incorrect", nil
}

func TestScoreSingle(t *testing.T) {
	for _, tc := range []struct {
		pred, answer, want string
	}{
		{"$1,000", "1000", "correct\n"},
		{"999", "1000", "incorrect\n"},
	} {
		var out strings.Builder
		err := Score(context.Background(), ScoreOptions{Benchmark: bench.GAIA, Prediction: tc.pred, Answer: tc.answer}, nil, &out)
		if err != nil || out.String() != tc.want {
			t.Errorf("Score(%q, %q) = %q, %v; want %q", tc.pred, tc.answer, out.String(), err, tc.want)
		}
	}
	err := Score(context.Background(), ScoreOptions{Benchmark: bench.WebWalkerQA, Prediction: "x", Answer: "y"}, nil, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "needs a judge") {
		t.Errorf("webwalkerqa without judge: error = %v", err)
	}
	err = Score(context.Background(), ScoreOptions{Benchmark: bench.WebWalkerQA, Prediction: "garble", Answer: "y", Judge: scriptJudge{}}, nil, &strings.Builder{})
	if err == nil {
		t.Error("judge error in single mode: want an error")
	}
}

func TestScoreFile(t *testing.T) {
	in := `{"id": "a", "prediction": "Paris", "answer": "paris", "extra": [1, 2]}
{"id": "b", "question": "Q?", "prediction": "it is right", "answer": "Paris", "correct": false}

{"id": "c", "prediction": "garble", "answer": 42}
{"id": "d", "prediction": "London", "answer": "Paris"}
`
	var out strings.Builder
	err := Score(context.Background(), ScoreOptions{Benchmark: bench.JSONL, File: "-", Judge: scriptJudge{}, Concurrency: 2}, strings.NewReader(in), &out)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"a","prediction":"Paris","answer":"paris","extra":[1, 2],"correct":true}
{"id":"b","question":"Q?","prediction":"it is right","answer":"Paris","correct":true,"judge_output":["Correct"]}

{"id":"c","prediction":"garble","answer":42,"judge_error":"judge error: malformed verdict: no Correct/Incorrect","correct":null,"judge_output":["hmm"]}
{"id":"d","prediction":"London","answer":"Paris","correct":false,"judge_output":["Incorrect"]}
`
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestScoreFileErrorsNameLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"{\"prediction\": \"a\", \"answer\": \"b\"}\n{\"answer\": \"b\"}\n", `f.jsonl:2: missing "prediction"`},
		{"\n[1]\n", "f.jsonl:2: want a JSON object"},
		{"{\"prediction\": {}, \"answer\": \"b\"}\n", `f.jsonl:1: field "prediction"`},
		{"{\"prediction\": \"a\", \"answer\": \"b\"} x\n", "f.jsonl:1: trailing data"},
	} {
		p := filepath.Join(t.TempDir(), "f.jsonl")
		if err := os.WriteFile(p, []byte(tc.in), 0o644); err != nil {
			t.Fatal(err)
		}
		err := Score(context.Background(), ScoreOptions{Benchmark: bench.GAIA, File: p}, nil, &strings.Builder{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("input %q: error = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestScoreCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Score(ctx, ScoreOptions{Benchmark: bench.JSONL, File: "-", Judge: cancelJudge{}}, strings.NewReader(`{"prediction":"x","answer":"y"}`), &strings.Builder{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}

type cancelJudge struct{}

func (cancelJudge) Complete(ctx context.Context, _, _ string) (string, error) { return "", ctx.Err() }

func TestCompareAndReport(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	write := func(dir string, correct ...bool) {
		f, err := os.Create(filepath.Join(dir, report.ResultsFile))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for i, c := range correct {
			if err := bench.WriteResult(f, bench.Result{ID: string(rune('a' + i)), Correct: c}); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(dirA, true, false, false, false)
	write(dirB, true, true, true, false)
	var out strings.Builder
	if err := Compare(dirA, dirB, CompareOptions{Seed: 1}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "diff (B−A): +0.5000") || !strings.Contains(out.String(), "changed questions: 2") {
		t.Errorf("compare output:\n%s", out.String())
	}
	out.Reset()
	if err := Compare(dirA, dirB, CompareOptions{Seed: 1, Limit: 1}, &out); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), " -> "); got != 1 || !strings.Contains(out.String(), "… and 1 more") {
		t.Errorf("compare with --limit 1 listed %d questions:\n%s", got, out.String())
	}
	out.Reset()
	if err := Compare(dirA, dirB, CompareOptions{Seed: 1, JSON: true}, &out); err != nil || !strings.Contains(out.String(), `"diff": 0.5`) {
		t.Errorf("compare JSON: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := Report(dirB, &out); err != nil || !strings.Contains(out.String(), "avg pass@1 0.7500") {
		t.Errorf("report: %v %s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(dirB, report.ChartFile)); err != nil {
		t.Errorf("chart not written: %v", err)
	}
}
