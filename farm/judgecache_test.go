package farm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/store"
)

// mapCache is an in-memory store.Cache.
type mapCache map[string][]byte

func (m mapCache) Get(_ context.Context, key string) ([]byte, bool, error) {
	v, ok := m[key]
	return v, ok, nil
}

func (m mapCache) Set(_ context.Context, key string, value []byte, _ time.Duration) error {
	m[key] = value
	return nil
}

var _ store.Cache = mapCache{}

// countingModel answers every prompt with its user text, counting calls.
type countingModel struct{ calls int }

func (m *countingModel) Complete(_ context.Context, system, user string) (string, error) {
	m.calls++
	return "answer to " + user, nil
}

// TestCachedJudgeAsksOnlyWhatNoStoreAnswers: an answer the recorded run's
// store holds is copied into the new run's and not asked again; a new
// prompt is asked once and kept; the counts say which was which.
func TestCachedJudgeAsksOnlyWhatNoStoreAnswers(t *testing.T) {
	ctx := context.Background()
	src, dst := mapCache{}, mapCache{}
	src[judgeCacheKey("judge-m", "sys", "old")] = []byte("recorded answer")
	model := &countingModel{}
	j := NewCachedJudge(model, "judge-m", dst, src)

	got, err := j.Complete(ctx, "sys", "old")
	if err != nil || got != "recorded answer" {
		t.Fatalf("recorded prompt: got %q, %v; want the recorded answer", got, err)
	}
	if _, ok := dst[judgeCacheKey("judge-m", "sys", "old")]; !ok {
		t.Error("the recorded answer was not copied into the new run's store")
	}
	for range 2 {
		if got, err := j.Complete(ctx, "sys", "new"); err != nil || got != "answer to new" {
			t.Fatalf("new prompt: got %q, %v", got, err)
		}
	}
	if model.calls != 1 || j.Calls() != 1 || j.Cached() != 2 {
		t.Errorf("model calls %d, Calls %d, Cached %d; want 1, 1, 2", model.calls, j.Calls(), j.Cached())
	}
	// Another model's answer to the same prompt is not this one's.
	other := NewCachedJudge(model, "judge-other", dst, src)
	if _, err := other.Complete(ctx, "sys", "new"); err != nil || model.calls != 2 {
		t.Errorf("another judge model: calls %d, err %v; want a second call", model.calls, err)
	}
}

// TestRecordedRunErrorsAreUnreadableRuns: a directory that is no run is
// refused with its own message, and a store that is not there is an
// ErrUnreadableRun whose text is its cause's.
func TestRecordedRunErrorsAreUnreadableRuns(t *testing.T) {
	dir := t.TempDir()
	if err := CheckRunDirs("rescore", dir, filepath.Join(dir, "out"), true); err == nil {
		t.Fatal("a directory without summary.jsonl passed as a run")
	}
	if err := os.WriteFile(filepath.Join(dir, "out-file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckNewDir("rescore", dir); err == nil {
		t.Error("a directory holding files passed as a new one")
	}
	never := func(context.Context, string) (store.Store, error) {
		t.Fatal("no store should be opened")
		return nil, nil
	}
	_, _, _, err := OpenRecordedRun(context.Background(), dir, "", never, never)
	if !errors.Is(err, ErrUnreadableRun) {
		t.Fatalf("missing store: %v, want ErrUnreadableRun", err)
	}
	if want := filepath.Join(dir, StoreFile) + ": the run's store cannot be read: "; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
		t.Errorf("message %q, want it to start %q", err, want)
	}
	if _, _, _, err := OpenRecordedRun(context.Background(), dir, "ftp://x", never, never); !errors.Is(err, ErrUnreadableRun) {
		t.Errorf("unknown store scheme: %v, want ErrUnreadableRun", err)
	}
}
