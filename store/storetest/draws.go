package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/mgrpo/mgrpo/store"
)

// testDraws checks a streamed run's draws: records replaced, results
// kept first-wins, and both apart from the steps of the same numbers and
// from other runs.
func testDraws(t *testing.T, b Backend) {
	s := open(t, b)
	c := ctx(t)
	mustCreateRun(t, s, "r")
	if _, err := s.Draw(c, "r", 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Draw of a draw never put: %v, want ErrNotFound", err)
	}
	if err := s.PutDraw(c, "r", 1, []byte(`{"trained":0}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutDraw(c, "r", 1, []byte(`{"trained":2}`)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Draw(c, "r", 1); err != nil || string(got) != `{"trained":2}` {
		t.Errorf("Draw(1) = %s, %v; want the record put last", got, err)
	}
	if _, err := s.Draw(c, "other", 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Draw of another run: %v, want ErrNotFound", err)
	}

	want := map[string]string{}
	for k := range 8 {
		id := fmt.Sprintf("r/1/q0/%d", k)
		want[id] = fmt.Sprintf(`{"k":%d}`, k)
		if err := s.PutDrawResult(c, "r", 1, id, json.RawMessage(want[id])); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutDrawResult(c, "r", 1, "r/1/q0/0", json.RawMessage(`{"late":true}`)); err != nil {
		t.Fatal(err)
	}
	// Step 1's results and draw 2's are others.
	if err := s.PutResult(c, "r", 1, "r/1/q0/0", json.RawMessage(`{"step":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutDrawResult(c, "r", 2, "r/2/q1/0", json.RawMessage(`{"draw":2}`)); err != nil {
		t.Fatal(err)
	}
	for id, w := range want {
		if got, err := s.DrawResult(c, "r", 1, id); err != nil || !jsonEqual(got, json.RawMessage(w)) {
			t.Errorf("DrawResult(%s) = %s, %v; want %s (the first one put)", id, got, err, w)
		}
	}
	if _, err := s.DrawResult(c, "r", 3, "r/1/q0/0"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DrawResult of another draw's task: %v, want ErrNotFound", err)
	}
	if got, err := s.Result(c, "r", 1, "r/1/q0/0"); err != nil || !jsonEqual(got, json.RawMessage(`{"step":1}`)) {
		t.Errorf("Result of step 1 = %s, %v; want step 1's, not draw 1's", got, err)
	}
	got := map[string]string{}
	if err := s.ScanDrawResults(c, "r", 1, func(id string, r json.RawMessage) error {
		got[id] = string(r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("ScanDrawResults saw %d results, want %d", len(got), len(want))
	}
	stop := errors.New("stop")
	seen := 0
	if err := s.ScanDrawResults(c, "r", 1, func(string, json.RawMessage) error { seen++; return stop }); !errors.Is(err, stop) || seen != 1 {
		t.Errorf("ScanDrawResults with a failing fn: err %v after %d calls, want fn's error after 1", err, seen)
	}

	if err := s.DeleteDrawResults(c, "r", 1); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteDrawResults(c, "r", 1); err != nil {
		t.Errorf("DeleteDrawResults twice: %v", err)
	}
	left := 0
	if err := s.ScanDrawResults(c, "r", 1, func(string, json.RawMessage) error { left++; return nil }); err != nil || left != 0 {
		t.Errorf("%d results left after DeleteDrawResults (%v)", left, err)
	}
	if _, err := s.DrawResult(c, "r", 2, "r/2/q1/0"); err != nil {
		t.Errorf("DeleteDrawResults of draw 1 removed draw 2's results: %v", err)
	}
	if n, err := s.CountResults(c, "r", 1); err != nil || n != 1 {
		t.Errorf("DeleteDrawResults of draw 1 touched step 1's results: %d, %v", n, err)
	}
	if _, err := s.Draw(c, "r", 1); err != nil {
		t.Errorf("DeleteDrawResults removed the draw's record: %v", err)
	}
}
