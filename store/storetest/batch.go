package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/store"
)

// testBatch checks ApplyWrites (store.Batcher, or one call each): the
// writes of a batch mean what their own methods mean.
func testBatch(t *testing.T, b Backend) {
	s := open(t, b)
	c := ctx(t)
	mustCreateRun(t, s, "r")
	if err := s.PutResult(c, "r", 1, "r/1/q0/0", json.RawMessage(`{"first":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutDraw(c, "r", 3, []byte(`{"draw":3}`)); err != nil {
		t.Fatal(err)
	}
	ws := []store.Write{
		{Kind: store.WriteResult, Run: "r", Key: 1, TaskID: "r/1/q0/0", Value: json.RawMessage(`{"late":true}`)},
		{Kind: store.WriteResult, Run: "r", Key: 1, TaskID: "r/1/q0/1", Value: json.RawMessage(`{"k":1}`)},
		{Kind: store.WriteDrawResult, Run: "r", Key: 3, TaskID: "r/d3/q0/0", Value: json.RawMessage(`{"d":3}`)},
		{Kind: store.WriteCache, TaskID: "k", Value: json.RawMessage("v1"), TTL: time.Hour},
		{Kind: store.WriteCache, TaskID: "k", Value: json.RawMessage("v2"), TTL: time.Hour},
		{Kind: store.WriteCache, TaskID: "empty", Value: json.RawMessage{}},
	}
	if err := store.ApplyWrites(c, s, ws); err != nil {
		t.Fatalf("ApplyWrites: %v", err)
	}
	// Applied again (a batch that failed partway is): nothing changes.
	if err := store.ApplyWrites(c, s, ws); err != nil {
		t.Fatalf("ApplyWrites again: %v", err)
	}
	for _, tc := range []struct{ id, want string }{{"r/1/q0/0", `{"first":true}`}, {"r/1/q0/1", `{"k":1}`}} {
		if got, err := s.Result(c, "r", 1, tc.id); err != nil || !jsonEqual(got, json.RawMessage(tc.want)) {
			t.Errorf("Result(%s) = %s, %v; want %s", tc.id, got, err, tc.want)
		}
	}
	if n, err := s.CountResults(c, "r", 1); err != nil || n != 2 {
		t.Errorf("CountResults = %d, %v; want 2", n, err)
	}
	if got, err := s.DrawResult(c, "r", 3, "r/d3/q0/0"); err != nil || !jsonEqual(got, json.RawMessage(`{"d":3}`)) {
		t.Errorf("DrawResult = %s, %v", got, err)
	}
	if v, ok, err := s.Get(c, "k"); err != nil || !ok || string(v) != "v2" {
		t.Errorf("Get(k) = %q, %v, %v; want the batch's last value v2", v, ok, err)
	}
	if v, ok, err := s.Get(c, "empty"); err != nil || !ok || len(v) != 0 {
		t.Errorf("Get(empty) = %q, %v, %v; want an empty value", v, ok, err)
	}
	if err := store.ApplyWrites(c, s, nil); err != nil {
		t.Errorf("ApplyWrites of no writes: %v", err)
	}
}
