package trainer

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

const testBase = "sim/toy-base"

// noCheckpoints as Config.CheckpointDir makes newTestServer leave it empty.
const noCheckpoints = "\x00none"

// zeroToy is Toy with all-zero initial logits: every bucket has
// probability 1/Vocab, so losses can be computed by hand.
type zeroToy struct{ Toy }

func (p zeroToy) Initial(string) ([]float64, error) { return make([]float64, p.Vocab*p.Vocab), nil }

type testServer struct {
	*Server
	url string
	t   *testing.T
}

// newTestServer serves cfg (a Toy of 4 buckets, the test base model and a
// temporary checkpoint directory unless set) on a loopback test server.
func newTestServer(t *testing.T, cfg Config) *testServer {
	t.Helper()
	return wrapTestServer(t, New(withTestDefaults(t, cfg)))
}

// withTestDefaults fills the test policy, base model and a checkpoint
// directory into cfg.
func withTestDefaults(t *testing.T, cfg Config) Config {
	t.Helper()
	if cfg.Policy == nil {
		cfg.Policy = Toy{Vocab: 4}
	}
	if cfg.BaseModels == nil {
		cfg.BaseModels = []string{testBase}
	}
	switch cfg.CheckpointDir {
	case "":
		cfg.CheckpointDir = t.TempDir()
	case noCheckpoints:
		cfg.CheckpointDir = ""
	}
	return cfg
}

// wrapTestServer serves s for the test, closing both at its end.
func wrapTestServer(t *testing.T, s *Server) *testServer {
	t.Helper()
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		s.Close()
	})
	return &testServer{Server: s, url: hs.URL, t: t}
}

// postNoFatal is post for other goroutines than the test's: it reports a
// failed request as status 0.
func (ts *testServer) postNoFatal(route string, body any) (int, map[string]any) {
	raw, _ := json.Marshal(body)
	resp, err := http.Post(ts.url+"/api/v1/"+route, "application/json", bytes.NewReader(raw))
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// waitFor polls cond until it holds, failing the test after a deadline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in time")
		}
		time.Sleep(time.Millisecond)
	}
}

// post sends body (JSON-encoded unless already []byte) to route and
// returns the status and the decoded answer.
func (ts *testServer) post(route string, body any) (int, map[string]any) {
	ts.t.Helper()
	raw, ok := body.([]byte)
	if !ok {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			ts.t.Fatalf("encode %s body: %v", route, err)
		}
	}
	resp, err := http.Post(ts.url+"/api/v1/"+route, "application/json", bytes.NewReader(raw))
	if err != nil {
		ts.t.Fatalf("POST %s: %v", route, err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, decodeAnswer(ts.t, route, resp.Body)
}

func decodeAnswer(t *testing.T, route string, r io.Reader) map[string]any {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: read answer: %v", route, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: answer %q is not a JSON object: %v", route, b, err)
	}
	return m
}

// mustPost is post failing the test on a status other than 200.
func (ts *testServer) mustPost(route string, body any) map[string]any {
	ts.t.Helper()
	st, m := ts.post(route, body)
	if st != http.StatusOK {
		ts.t.Fatalf("%s: status %d, answer %v", route, st, m)
	}
	return m
}

// result waits for a future's result.
func (ts *testServer) result(requestID any) map[string]any {
	ts.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		st, m := ts.post("retrieve_future", map[string]any{"request_id": requestID})
		if st == http.StatusRequestTimeout || st == http.StatusOK && m["type"] == "try_again" {
			continue
		}
		if st != http.StatusOK {
			ts.t.Fatalf("retrieve_future %v: status %d, answer %v", requestID, st, m)
		}
		return m
	}
	ts.t.Fatalf("future %v: no result in time", requestID)
	return nil
}

// call submits a queued request and returns its future's result.
func (ts *testServer) call(route string, body any) map[string]any {
	ts.t.Helper()
	return ts.result(ts.mustPost(route, body)["request_id"])
}

// newModel opens a session and creates a model, returning its id.
func (ts *testServer) newModel() string {
	ts.t.Helper()
	sess := ts.mustPost("create_session", map[string]any{"tags": []string{"test"}, "type": "create_session"})
	res := ts.call("create_model", map[string]any{
		"session_id": sess["session_id"], "model_seq_id": 0, "base_model": testBase,
		"lora_config": map[string]any{"rank": 8, "seed": 1}, "type": "create_model",
	})
	id, _ := res["model_id"].(string)
	if id == "" {
		ts.t.Fatalf("create_model: result %v has no model_id", res)
	}
	return id
}

// tdatum is a datum under construction: tokens is the full sequence (the
// model input is all but the last), and the per-target inputs.
type tdatum struct {
	tokens              []int
	weights, lps, advs  []float64
	dropField, badDtype string
	shape               []int
	targetsOverride     []int
}

// newDatum returns a datum of seq whose targets after the first prompt
// tokens carry weight 1, sampler logprob lp and advantage adv.
func newDatum(seq []int, prompt int, lp, adv float64) *tdatum {
	n := len(seq) - 1
	d := &tdatum{tokens: seq, weights: make([]float64, n), lps: make([]float64, n), advs: make([]float64, n)}
	for j := prompt - 1; j < n; j++ {
		d.weights[j], d.lps[j], d.advs[j] = 1, lp, adv
	}
	return d
}

func (d *tdatum) wire() map[string]any {
	n := len(d.tokens) - 1
	targets := append([]int(nil), d.tokens[1:]...)
	if d.targetsOverride != nil {
		targets = d.targetsOverride
	}
	tensor := func(name string, data any, dtype string, l int) map[string]any {
		if d.badDtype == name {
			dtype = "float64"
		}
		shape := []int{l}
		if d.shape != nil {
			shape = d.shape
		}
		return map[string]any{"data": data, "dtype": dtype, "shape": shape}
	}
	in := map[string]any{
		"target_tokens": tensor("target_tokens", targets, "int64", len(targets)),
		"weights":       tensor("weights", d.weights, "float32", len(d.weights)),
		"logprobs":      tensor("logprobs", d.lps, "float32", len(d.lps)),
		"advantages":    tensor("advantages", d.advs, "float32", len(d.advs)),
	}
	delete(in, d.dropField)
	return map[string]any{
		"model_input":    map[string]any{"chunks": []any{map[string]any{"type": "encoded_text", "tokens": d.tokens[:n]}}},
		"loss_fn_inputs": in,
	}
}

func fwdBwd(model string, seq int, loss string, cfg map[string]float64, data ...*tdatum) map[string]any {
	wd := make([]any, len(data))
	for i, d := range data {
		wd[i] = d.wire()
	}
	in := map[string]any{"data": wd, "loss_fn": loss}
	if cfg != nil {
		in["loss_fn_config"] = cfg
	}
	return map[string]any{"forward_backward_input": in, "model_id": model, "seq_id": seq}
}

func forwardBody(model string, seq int, loss string, cfg map[string]float64, data ...*tdatum) map[string]any {
	b := fwdBwd(model, seq, loss, cfg, data...)
	b["forward_input"] = b["forward_backward_input"]
	delete(b, "forward_backward_input")
	return b
}

func optim(model string, seq int, lr float64) map[string]any {
	return map[string]any{"adam_params": map[string]any{"learning_rate": lr, "beta1": 0.9, "beta2": 0.95, "eps": 1e-12}, "model_id": model, "seq_id": seq, "type": "optim_step"}
}

func metric(t *testing.T, res map[string]any, name string) float64 {
	t.Helper()
	m, _ := res["metrics"].(map[string]any)
	v, ok := m[name].(float64)
	if !ok {
		t.Fatalf("metric %s missing from %v", name, res)
	}
	return v
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }
