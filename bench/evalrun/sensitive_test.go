package evalrun

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/report"
	"github.com/mgrpo/mgrpo/bench/score"
)

// TestSensitiveItemsLeaveNoText runs xbench-like items whose predictions, judge replies and error
// messages all restate the question or the answer, and checks that no file of the eval directory and
// no log line holds either.
func TestSensitiveItemsLeaveNoText(t *testing.T) {
	secret := func(i int) (q, a string) {
		return fmt.Sprintf("机密问题 %d: which secret harbour is meant?", i), fmt.Sprintf("秘密答案-%d Harbourton", i)
	}
	var items []bench.Item
	for i := range 3 {
		q, a := secret(i)
		items = append(items, bench.Item{ID: fmt.Sprint(i + 1), Benchmark: bench.XBench, Question: q, Answer: a, Sensitive: true})
	}
	agent := &fakeAgent{reply: func(_ context.Context, q agents.Query) *agents.Rollout {
		var it bench.Item
		for _, c := range items {
			if c.Question == q.Question {
				it = c
			}
		}
		switch {
		case it.ID == "3" && strings.HasSuffix(q.Key, "/0"):
			return failedRollout("context length exceeded for prompt: " + it.Question)
		case strings.HasSuffix(q.Key, "/0"):
			return answerRollout(it.Answer)
		default:
			return answerRollout("I believe it is " + strings.ToUpper(it.Answer) + ", as the question " + it.Question + " implies")
		}
	}}
	// An xbench-style judge that quotes the answer in every reply and fails on item 2.
	judge := score.ScorerFunc(func(_ context.Context, c score.Case) (score.Verdict, error) {
		raw := "最终答案: " + c.Prediction + "\n解释: 标准答案是 " + c.Answer + "\n结论: 正确"
		v := score.Verdict{Method: score.MethodJudge, JudgeOutput: []string{raw}, Correct: true}
		if strings.Contains(c.Answer, "-1 ") {
			return v, fmt.Errorf("judge: reply does not match %q: %w", c.Answer, score.ErrMalformedVerdict)
		}
		return v, nil
	})
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dir := t.TempDir()
	out, err := Run(context.Background(), Config{Benchmark: bench.XBench, Items: items, Runs: 3, Out: dir, Agent: agent,
		Scorer: judge, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	files := readAll(t, dir)
	files["(log)"] = logs.String()
	for name, body := range files {
		for _, it := range items {
			for _, text := range []string{it.Question, it.Answer, strings.ToUpper(it.Answer), "Harbourton", "HARBOURTON", "机密", "秘密"} {
				if strings.Contains(body, text) {
					t.Errorf("%s holds sensitive text %q", name, text)
				}
			}
		}
	}

	rs := mustReadResults(t, dir)
	checkEachPairOnce(t, rs, items, 3)
	for _, r := range rs {
		if r.Hash == "" {
			t.Errorf("%s/%d: no hash", r.ID, r.Run)
		}
		switch r.Outcome() {
		case bench.OutcomeError:
			if !strings.Contains(r.Error, "context length exceeded for prompt: "+Redacted) {
				t.Errorf("%s/%d: error %q, want the message with the question redacted", r.ID, r.Run, r.Error)
			}
		case bench.OutcomeJudgeError:
			if !strings.Contains(r.JudgeError, Redacted) {
				t.Errorf("%s/%d: judge error %q, want the answer redacted", r.ID, r.Run, r.JudgeError)
			}
		}
		if r.Error == "" && !strings.HasPrefix(r.Prediction, "sha256:") {
			t.Errorf("%s/%d: prediction %q, want a hash", r.ID, r.Run, r.Prediction)
		}
		for _, j := range r.JudgeOutput {
			if !strings.HasPrefix(j, "sha256:") {
				t.Errorf("%s/%d: judge output %q, want a hash", r.ID, r.Run, j)
			}
		}
	}
	// Runs 1 and 2 give the same prediction, so hashed predictions must still vote together: every
	// question with a verdict has a majority, and the vote is right where the judge said so.
	o := out.Summary.Overall
	if o.Errors != 1 || o.JudgeErrors != 3 || o.Correct != 5 {
		t.Errorf("overall correct/errors/judge errors = %d/%d/%d, want 5/1/3", o.Correct, o.Errors, o.JudgeErrors)
	}
	if got, want := o.MajorityVote, 2.0/3; got != want {
		t.Errorf("majority vote %v, want %v", got, want)
	}
}

func TestRedactKeepsVotesTogether(t *testing.T) {
	it := bench.Item{Question: "Q?", Answer: "A", Sensitive: true}
	a := bench.Result{Prediction: "  Foo   Bar "}
	b := bench.Result{Prediction: "foo bar"}
	Redact(&a, it)
	Redact(&b, it)
	if a.Prediction != b.Prediction || report.VoteKey(a.Prediction) != a.Prediction {
		t.Errorf("predictions equal under VoteKey hash to %q and %q", a.Prediction, b.Prediction)
	}
	empty := bench.Result{}
	Redact(&empty, it)
	if empty.Prediction != "" {
		t.Errorf("empty prediction became %q", empty.Prediction)
	}
}
