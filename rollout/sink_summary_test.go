package rollout

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteSummaryKeepsOneLinePerStepInOrder(t *testing.T) {
	dir := t.TempDir()
	sink := DirSink{Dir: dir}
	ctx := context.Background()
	for _, s := range []StepSummary{{Step: 2, Rollouts: 1}, {Step: 1, Rollouts: 2}, {Step: 2, Rollouts: 3, WallSeconds: 1.5}} {
		if err := sink.WriteSummary(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadSummaries(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Step != 1 || got[1].Step != 2 || got[1].Rollouts != 3 {
		t.Fatalf("summaries %+v, want steps 1 and 2 with step 2's second summary", got)
	}
	raw, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"wall_seconds":1.5`) {
		t.Errorf("summary.jsonl lacks the duration in seconds: %s", raw)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("dir holds %d entries, want only %s (no temporary files)", len(entries), SummaryFile)
	}
}

func TestWriteSummaryRejectsACorruptFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, SummaryFile)
	if err := os.WriteFile(path, []byte("{\"step\":1}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := DirSink{Dir: dir}.WriteSummary(context.Background(), StepSummary{Step: 2})
	if err == nil || !strings.Contains(err.Error(), SummaryFile+":2") {
		t.Fatalf("err %v, want one naming %s and line 2", err, SummaryFile)
	}
}
