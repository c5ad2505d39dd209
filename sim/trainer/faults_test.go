package trainer

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// statuses sends n create_session requests and returns their statuses
// (0 for a connection error), and the Retry-After of the 429s.
func statuses(t *testing.T, ts *testServer, n int) (out []int, retryAfter []string) {
	t.Helper()
	for range n {
		resp, err := http.Post(ts.url+"/api/v1/create_session", "application/json", bytes.NewReader([]byte(`{}`)))
		if err != nil {
			out = append(out, 0)
			continue
		}
		var m map[string]any
		if json.NewDecoder(resp.Body).Decode(&m) != nil {
			out = append(out, 0)
		} else {
			out = append(out, resp.StatusCode)
		}
		if resp.StatusCode == 429 {
			retryAfter = append(retryAfter, resp.Header.Get("Retry-After"))
		}
		resp.Body.Close()
	}
	return out, retryAfter
}

func TestFaultsAreSeeded(t *testing.T) {
	f := Faults{Rate500: 0.15, Rate503: 0.15, Rate429: 0.15, RateDrop: 0.15}
	a, ra := statuses(t, newTestServer(t, Config{Seed: 9, Faults: f}), 60)
	b, _ := statuses(t, newTestServer(t, Config{Seed: 9, Faults: f}), 60)
	c, _ := statuses(t, newTestServer(t, Config{Seed: 10, Faults: f}), 60)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different faults:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 9 and 10 injected the same faults: %v", a)
	}
	for _, st := range []int{200, 500, 503, 429, 0} {
		if !slices.Contains(a, st) {
			t.Errorf("no %d among %v", st, a)
		}
	}
	for _, v := range ra {
		if v != "1" {
			t.Errorf("429 with Retry-After %q, want 1", v)
		}
	}
}

func TestDroppedAnswerTookEffect(t *testing.T) {
	ts := newTestServer(t, Config{Seed: 3})
	model := ts.newModel()
	// Same server state, now dropping half the answers.
	ts.SetFaults(Faults{RateDrop: 0.5})
	body, _ := json.Marshal(fwdBwd(model, 1, "importance_sampling", nil, newDatum([]int{0, 1, 2}, 1, -1, 1)))
	var ids []string
	for len(ids) < 2 {
		resp, err := http.Post(ts.url+"/api/v1/forward_backward", "application/json", bytes.NewReader(body))
		if err != nil {
			continue
		}
		var m futureAnswer
		err = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if err == nil {
			ids = append(ids, m.RequestID)
		}
	}
	if ts.FaultCounts()[FaultDrop] == 0 {
		t.Fatal("no answer dropped: the test proves nothing; change the seed")
	}
	ts.SetFaults(Faults{})
	if ids[0] != ids[1] {
		t.Errorf("answers after drops name futures %v: want one request", ids)
	}
	ts.result(ids[0])
	m := ts.model(model)
	m.st.Lock()
	defer m.st.Unlock()
	if m.accumulated != 1 {
		t.Errorf("%d datums accumulated, want 1: a dropped request ran twice or not at all", m.accumulated)
	}
}

func TestExpiredFutureAnswersWhenSentAgain(t *testing.T) {
	ts := newTestServer(t, Config{Seed: 1})
	model := ts.newModel()
	ts.SetFaults(Faults{RateFutureExpire: 1})
	body := fwdBwd(model, 1, "importance_sampling", nil, newDatum([]int{0, 1, 2}, 1, -1, 1))
	id := ts.mustPost("forward_backward", body)["request_id"]
	ts.SetFaults(Faults{})
	if st, m := ts.post("retrieve_future", map[string]any{"request_id": id}); st != http.StatusGone {
		t.Fatalf("first retrieve of an expiring future: %d %v, want 410", st, m)
	}
	// As the SDK does on a 410: the same request again, same seq_id.
	again := ts.mustPost("forward_backward", body)["request_id"]
	if again != id {
		t.Errorf("resend answered future %v, want the original %v", again, id)
	}
	if res := ts.result(again); res["error"] != nil {
		t.Fatalf("resent request: %v", res)
	}
	if ts.FaultCounts()[FaultFutureExpire] != 1 {
		t.Errorf("fault counts %v: want one %s", ts.FaultCounts(), FaultFutureExpire)
	}
	res := ts.call("optim_step", optim(model, 2, 0.1))
	if got := metric(t, res, "datums"); got != 1 {
		t.Errorf("optim_step after an expired future: %v datums, want 1 (trained once)", got)
	}
}
