package evalrun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/report"
	"github.com/mgrpo/mgrpo/bench/score"
)

// resultLine is the JSON line of a correct result of items[i], run run.
func resultLine(tb testing.TB, it bench.Item, run int) string {
	tb.Helper()
	r := bench.ResultFor(it, run)
	r.Prediction, r.Correct, r.Method = it.Answer, true, score.MethodExact
	var b strings.Builder
	if err := bench.WriteResult(&b, r); err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

func TestResumeTruncatedLastLine(t *testing.T) {
	items := testItems(3)
	full := resultLine(t, items[1], 0)
	tests := []struct {
		name        string
		tail        string
		wantDropped bool
		wantResumed int
	}{
		{"cut mid-line", full[:len(full)/2], true, 2},
		{"cut before the newline", strings.TrimSuffix(full, "\n"), false, 3},
		{"complete", full, false, 3},
		{"only spaces after the last newline", "  ", false, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			body := resultLine(t, items[0], 0) + resultLine(t, items[0], 1) + tt.tail
			path := filepath.Join(dir, report.ResultsFile)
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			agent := &fakeAgent{reply: answerFor(items, func(agents.Query) bool { return true })}
			out, err := Run(context.Background(), Config{Items: items, Runs: 2, Out: dir, Agent: agent, Scorer: score.GAIAExact})
			if err != nil {
				t.Fatal(err)
			}
			if out.DroppedLine != tt.wantDropped || out.Resumed != tt.wantResumed {
				t.Errorf("dropped %v, resumed %d; want %v, %d", out.DroppedLine, out.Resumed, tt.wantDropped, tt.wantResumed)
			}
			if got, want := len(agent.queries()), 6-tt.wantResumed; got != want {
				t.Errorf("agent ran %d pairs, want %d", got, want)
			}
			checkEachPairOnce(t, mustReadResults(t, dir), items, 2)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
				if !strings.HasPrefix(line, "{") || !strings.HasSuffix(line, "}") {
					t.Errorf("line %d of the resumed file is not one JSON object: %q", i+1, line)
				}
			}
			if o := out.Summary.Overall; o.Correct != 6 || o.Results != 6 {
				t.Errorf("summary over %d results with %d correct, want 6 and 6", o.Results, o.Correct)
			}
		})
	}
}

func TestResumeRefusesACorruptOrForeignFile(t *testing.T) {
	items := testItems(2)
	other := items[0]
	other.Answer = "another dataset's answer"
	tests := []struct {
		name, body, want string
	}{
		{"malformed middle line", resultLine(t, items[0], 0) + "{not json\n" + resultLine(t, items[1], 0), "results.jsonl:2"},
		{"other text under the same id", resultLine(t, other, 0), "for other text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, report.ResultsFile)
			if err := os.WriteFile(path, []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			agent := &fakeAgent{reply: answerFor(items, func(agents.Query) bool { return true })}
			_, err := Run(context.Background(), Config{Items: items, Runs: 1, Out: dir, Agent: agent, Scorer: score.GAIAExact})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want one containing %q", err, tt.want)
			}
			if n := len(agent.queries()); n != 0 {
				t.Errorf("agent ran %d pairs on a refused file", n)
			}
			b, _ := os.ReadFile(path)
			if string(b) != tt.body {
				t.Errorf("the refused file was modified")
			}
		})
	}
}

func TestWiderOrRepeatedEvalIsNotNarrower(t *testing.T) {
	items := testItems(3)
	dir := t.TempDir()
	// Item 0 twice (a repeated pair) in a directory of a 1-question eval:
	// an eval of all three questions, or of 2 runs, covers more, not less.
	body := resultLine(t, items[0], 0) + resultLine(t, items[0], 0)
	if err := os.WriteFile(filepath.Join(dir, report.ResultsFile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, runs := range []int{1, 2} {
		if err := CheckDir(Config{Items: items, Runs: runs, Out: dir}); err != nil {
			t.Errorf("runs %d: %v, want nil", runs, err)
		}
	}
	if err := CheckDir(Config{Items: items, Runs: 1, Out: t.TempDir()}); err != nil {
		t.Errorf("an empty directory: %v, want nil", err)
	}
}

func TestForeignLinesKeptButNotSummarised(t *testing.T) {
	items := testItems(3)
	dir := t.TempDir()
	path := filepath.Join(dir, report.ResultsFile)
	// Run 2 of item 0 is outside a 2-run eval; item 2 is outside an eval of items 0 and 1; the second
	// line of (q0, 0) repeats a pair.
	body := resultLine(t, items[0], 2) + resultLine(t, items[2], 0) + resultLine(t, items[0], 0) + resultLine(t, items[0], 0)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := &fakeAgent{reply: answerFor(items, func(agents.Query) bool { return false })}
	cfg := Config{Items: items[:2], Runs: 2, Out: dir, Agent: agent, Scorer: score.GAIAExact}
	// Without Replace, an eval that leaves recorded pairs out of its
	// report is refused, before it runs anything or touches the file.
	for name, err := range map[string]error{"CheckDir": CheckDir(cfg), "Run": func() error { _, err := Run(context.Background(), cfg); return err }()} {
		if !errors.Is(err, ErrNarrower) || !strings.Contains(err.Error(), "--replace") || !strings.Contains(err.Error(), "leave out 2 recorded pair(s)") {
			t.Errorf("%s: %v, want ErrNarrower naming the 2 pairs left out and --replace", name, err)
		}
	}
	if n := len(agent.queries()); n != 0 {
		t.Errorf("agent ran %d pairs of a refused eval", n)
	}
	if b, _ := os.ReadFile(path); string(b) != body {
		t.Error("the refused eval modified results.jsonl")
	}
	cfg.Replace = true
	out, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if out.Foreign != 3 || out.Resumed != 1 || out.Ran != 3 {
		t.Errorf("outcome %+v, want 3 foreign lines, 1 resumed, 3 ran", out)
	}
	if got := len(mustReadResults(t, dir)); got != 7 {
		t.Errorf("%d lines in results.jsonl, want the 4 kept and 3 new", got)
	}
	if o := out.Summary.Overall; o.Results != 4 || o.Correct != 1 {
		t.Errorf("summary over %d results (%d correct), want the eval's 4 (1 correct)", o.Results, o.Correct)
	}
}
