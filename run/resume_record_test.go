package run

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/store"
)

// recordStore answers Run with one record; the rest of store.Store is not
// used by recordedEquivalent.
type recordStore struct {
	store.Store
	rec store.RunRecord
}

func (s recordStore) Run(_ context.Context, id string) (store.RunRecord, error) {
	if id != s.rec.ID {
		return store.RunRecord{}, store.ErrNotFound
	}
	return s.rec, nil
}

// TestResumeOfARunRecordedBeforeNewKeys checks that a run whose record an
// older mgrpo wrote (without the keys added since) resumes as the same run,
// while a record of another configuration stays another configuration.
func TestResumeOfARunRecordedBeforeNewKeys(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Run, cfg.Out = "old", "out"
	ours, err := cfg.RunRecordConfig()
	if err != nil {
		t.Fatal(err)
	}
	// The older record: today's minus a key it did not have.
	var m map[string]any
	if err := json.Unmarshal(ours, &m); err != nil {
		t.Fatal(err)
	}
	planner := m["Planner"].(map[string]any)
	if _, ok := planner["MinP"]; !ok {
		t.Fatalf("the record has no Planner.MinP to leave out: %v", planner)
	}
	delete(planner, "MinP")
	older, _ := json.Marshal(m)
	record := func(config json.RawMessage) recordStore {
		spec, _ := json.Marshal(farm.RunSpec{Config: config, Tasks: []farm.Task{{ID: "q1", Question: "?", Answer: "!"}}})
		return recordStore{rec: store.RunRecord{ID: "old", Version: store.RunRecordVersion, Config: spec}}
	}
	if got := recordedEquivalent(context.Background(), record(older), "old", ours); string(got) != string(older) {
		t.Errorf("a record lacking a newer key: got our configuration, want the stored one (so the farm sees the same run)")
	}
	other := DefaultConfig()
	other.Run, other.Out, other.GroupSize = "old", "out", 3
	otherJSON, _ := other.RunRecordConfig()
	if got := recordedEquivalent(context.Background(), record(otherJSON), "old", ours); string(got) != string(ours) {
		t.Errorf("a record of another configuration: got the stored one, want ours (the farm then refuses)")
	}
	if got := recordedEquivalent(context.Background(), record(older), "new", ours); string(got) != string(ours) {
		t.Errorf("no record: got something else than ours")
	}
}
