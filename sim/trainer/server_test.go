package trainer

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRoutes(t *testing.T) {
	ts := newTestServer(t, Config{APIKey: ""})

	resp, err := http.Get(ts.url + "/api/v1/get_server_capabilities")
	if err != nil {
		t.Fatal(err)
	}
	caps := decodeAnswer(t, "get_server_capabilities", resp.Body)
	resp.Body.Close()
	models, _ := caps["supported_models"].([]any)
	if len(models) != 1 || models[0].(map[string]any)["model_name"] != testBase {
		t.Errorf("get_server_capabilities: supported_models %v, want [{model_name: %s}]", caps["supported_models"], testBase)
	}

	sess := ts.mustPost("create_session", map[string]any{"tags": []string{"x"}, "user_metadata": map[string]string{}, "sdk_version": "t", "type": "create_session"})
	if sess["type"] != "create_session" || sess["session_id"] == "" {
		t.Errorf("create_session: %v", sess)
	}
	if hb := ts.mustPost("session_heartbeat", map[string]any{"session_id": sess["session_id"], "type": "session_heartbeat"}); hb["type"] != "session_heartbeat" {
		t.Errorf("session_heartbeat: %v", hb)
	}
	sub := ts.mustPost("create_model", map[string]any{"session_id": sess["session_id"], "model_seq_id": 0, "base_model": testBase, "lora_config": map[string]any{"rank": 16, "seed": 3, "train_mlp": true}})
	res := ts.result(sub["request_id"])
	model, _ := res["model_id"].(string)
	if model == "" || sub["model_id"] != model {
		t.Fatalf("create_model: answered %v, result %v", sub, res)
	}
	info := ts.mustPost("get_info", map[string]any{"model_id": model, "type": "get_info"})
	data, _ := info["model_data"].(map[string]any)
	if info["model_id"] != model || data["model_name"] != testBase || info["lora_rank"] != 16.0 {
		t.Errorf("get_info: %v", info)
	}

	d := newDatum([]int{1, 2, 3, 0, 1, 2}, 2, -1.4, 0.5)
	fwd := ts.call("forward", forwardBody(model, 1, "importance_sampling", nil, d))
	fb := ts.call("forward_backward", fwdBwd(model, 2, "importance_sampling", nil, d))
	if fwd["loss_fn_output_type"] == "" || fb["loss_fn_output_type"] == "" {
		t.Errorf("forward %v / forward_backward %v: no loss_fn_output_type", fwd, fb)
	}
	if a, b := metric(t, fwd, "loss:sum"), metric(t, fb, "loss:sum"); a != b {
		t.Errorf("forward loss %v, forward_backward loss %v at the same parameters", a, b)
	}
	outs, _ := fb["loss_fn_outputs"].([]any)
	if len(outs) != 1 {
		t.Fatalf("loss_fn_outputs: %v", fb["loss_fn_outputs"])
	}
	lp := outs[0].(map[string]any)["logprobs"].(map[string]any)
	if lp["dtype"] != "float32" || len(lp["data"].([]any)) != 5 {
		t.Errorf("loss_fn_outputs[0].logprobs: %v", lp)
	}
	before, _ := ts.Params(model)
	opt := ts.call("optim_step", optim(model, 3, 0.01))
	if metric(t, opt, "grad_norm") == 0 {
		t.Errorf("optim_step: zero grad_norm after forward_backward: %v", opt)
	}
	after, _ := ts.Params(model)
	moved := false
	for i := range before {
		moved = moved || before[i] != after[i]
	}
	if !moved {
		t.Error("optim_step did not move the parameters")
	}
	save := ts.call("save_weights_for_sampler", map[string]any{"model_id": model, "path": "step-1", "seq_id": 4, "type": "save_weights_for_sampler"})
	if want := "tinker://" + model + "/sampler_weights/step-1"; save["path"] != want {
		t.Errorf("save_weights_for_sampler: path %v, want %s", save["path"], want)
	}
	raw, err := os.ReadFile(filepath.Join(ts.cfg.CheckpointDir, model, "step-1.json"))
	if err != nil {
		t.Fatalf("checkpoint file: %v", err)
	}
	var saved struct{ Params []float64 }
	if err := json.Unmarshal(raw, &saved); err != nil || len(saved.Params) != len(after) || saved.Params[0] != after[0] {
		t.Errorf("checkpoint holds %s (err %v), want the parameters %v", raw, err, after)
	}

	resp, err = http.Get(ts.url + "/api/v1/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
}

func TestStatusErrors(t *testing.T) {
	ts := newTestServer(t, Config{APIKey: "k"})
	for _, c := range []struct {
		name, method, route, key string
		want                     int
	}{
		{"unknown route", "POST", "nope", "k", 404},
		{"wrong method", "GET", "create_session", "k", 405},
		{"no key", "POST", "create_session", "", 401},
		{"wrong key", "POST", "create_session", "x", 401},
		{"key", "POST", "create_session", "k", 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, ts.url+"/api/v1/"+c.route, strings.NewReader("{}"))
			if c.key != "" {
				req.Header.Set("X-API-Key", c.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			m := decodeAnswer(t, c.route, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("status %d, want %d (%v)", resp.StatusCode, c.want, m)
			}
			if c.want != 200 && m["detail"] == nil {
				t.Errorf("error answer %v has no detail", m)
			}
		})
	}
}

func TestSessionExpires(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ts := newTestServer(t, Config{SessionTTL: time.Minute, Now: clock})
	id := ts.mustPost("create_session", map[string]any{})["session_id"]
	for range 3 {
		advance(50 * time.Second)
		ts.mustPost("session_heartbeat", map[string]any{"session_id": id})
	}
	advance(61 * time.Second)
	if st, m := ts.post("session_heartbeat", map[string]any{"session_id": id}); st != 404 {
		t.Errorf("heartbeat after the TTL: %d %v, want 404", st, m)
	}
	if st, m := ts.post("create_model", map[string]any{"session_id": id, "base_model": testBase}); st != 404 || !strings.Contains(m["detail"].(string), "expired") {
		t.Errorf("create_model in an expired session: %d %v, want 404", st, m)
	}
}

func TestCreateModel(t *testing.T) {
	ts := newTestServer(t, Config{})
	sess := ts.mustPost("create_session", map[string]any{})["session_id"]
	body := map[string]any{"session_id": sess, "model_seq_id": 0, "base_model": testBase, "lora_config": map[string]any{"rank": 4}}
	a := ts.mustPost("create_model", body)
	b := ts.mustPost("create_model", body)
	if a["model_id"] != b["model_id"] || a["request_id"] != b["request_id"] {
		t.Errorf("replayed create_model: %v then %v, want the same model and future", a, b)
	}
	body["lora_config"] = map[string]any{"rank": 8}
	if st, m := ts.post("create_model", body); st != 409 {
		t.Errorf("create_model reusing model_seq_id with another body: %d %v, want 409", st, m)
	}
	body["model_seq_id"] = 1
	if c := ts.mustPost("create_model", body); c["model_id"] == a["model_id"] {
		t.Errorf("a second model_seq_id made the same model %v", c["model_id"])
	}
	body["base_model"] = "Qwen/Unknown"
	body["model_seq_id"] = 2
	if st, m := ts.post("create_model", body); st != 400 || !strings.Contains(m["detail"].(string), "Qwen/Unknown") {
		t.Errorf("unknown base model: %d %v, want 400 naming it", st, m)
	}
	// A base model the server lists but the policy refuses is a 400 too.
	ts2 := newTestServer(t, Config{Policy: Toy{Vocab: 4, BaseModels: []string{"only"}}, BaseModels: []string{testBase}})
	sess2 := ts2.mustPost("create_session", map[string]any{})["session_id"]
	if st, m := ts2.post("create_model", map[string]any{"session_id": sess2, "base_model": testBase}); st != 400 {
		t.Errorf("base model the policy refuses: %d %v, want 400", st, m)
	}
}

func TestLongPollTimesOut(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer PollAnswer
	}{{"408", Poll408}, {"try_again", PollTryAgain}} {
		t.Run(c.name, func(t *testing.T) {
			ts := newTestServer(t, Config{PollTimeout: time.Millisecond, PollAnswer: c.answer})
			model := ts.newModel()
			// seq_id 2 waits for 1, so its future cannot resolve yet.
			sub := ts.mustPost("optim_step", optim(model, 2, 0.1))
			st, m := ts.post("retrieve_future", map[string]any{"request_id": sub["request_id"]})
			switch c.answer {
			case Poll408:
				if st != http.StatusRequestTimeout || m["detail"] == nil {
					t.Errorf("poll of a waiting future: %d %v, want 408 with detail", st, m)
				}
			case PollTryAgain:
				if st != 200 || m["type"] != "try_again" || m["request_id"] != sub["request_id"] || m["queue_state"] != "active" {
					t.Errorf("poll of a waiting future: %d %v, want 200 try_again", st, m)
				}
			}
			ts.call("forward_backward", fwdBwd(model, 1, "importance_sampling", nil, newDatum([]int{0, 1, 2}, 1, -1, 1)))
			if res := ts.result(sub["request_id"]); metric(t, res, "adam_step") != 1 {
				t.Errorf("optim_step result %v", res)
			}
		})
	}
	ts := newTestServer(t, Config{})
	if st, m := ts.post("retrieve_future", map[string]any{"request_id": "future_999"}); st != 404 {
		t.Errorf("unknown future: %d %v, want 404", st, m)
	}
	if st, m := ts.post("retrieve_future", map[string]any{"request_id": 12}); st != 404 {
		t.Errorf("unknown numeric future: %d %v, want 404", st, m)
	}
}

func TestSeqOrderAndReplay(t *testing.T) {
	ts := newTestServer(t, Config{})
	model := ts.newModel()
	d := newDatum([]int{0, 1, 2, 3, 1}, 1, -1, 1)
	// optim_step (3) and forward_backward (2) sent before forward_backward
	// (1): both wait, then run 1, 2, 3.
	opt := ts.mustPost("optim_step", optim(model, 3, 0.1))
	fb2 := ts.mustPost("forward_backward", fwdBwd(model, 2, "importance_sampling", nil, d))
	fb1 := ts.mustPost("forward_backward", fwdBwd(model, 1, "importance_sampling", nil, d))
	res := ts.result(opt["request_id"])
	if got := metric(t, res, "datums"); got != 2 {
		t.Errorf("optim_step ran after %v datums, want 2 (both forward_backwards first)", got)
	}
	if a, b := metric(t, ts.result(fb1["request_id"]), "loss:sum"), metric(t, ts.result(fb2["request_id"]), "loss:sum"); a != b {
		t.Errorf("forward_backward 1 loss %v, 2 loss %v: 2 ran after the step", a, b)
	}

	// A replay answers the original future; another body is 409.
	again := ts.mustPost("forward_backward", fwdBwd(model, 2, "importance_sampling", nil, d))
	if again["request_id"] != fb2["request_id"] {
		t.Errorf("replay of seq_id 2: future %v, want the original %v", again["request_id"], fb2["request_id"])
	}
	// The same content with keys in another order and other spacing.
	raw := []byte(`{"seq_id": 3, "model_id": "` + model + `", "type": "optim_step",
		"adam_params": {"eps": 1e-12, "beta2": 0.95, "beta1": 0.9, "learning_rate": 0.1}}`)
	if again := ts.mustPost("optim_step", raw); again["request_id"] != opt["request_id"] {
		t.Errorf("replay with keys reordered: future %v, want %v", again["request_id"], opt["request_id"])
	}
	for name, body := range map[string]map[string]any{
		"another body":  fwdBwd(model, 2, "ppo", nil, d),
		"another route": optim(model, 2, 0.1),
	} {
		if st, m := ts.post(map[string]string{"another body": "forward_backward", "another route": "optim_step"}[name], body); st != 409 || !strings.Contains(m["detail"].(string), "seq_id 2") {
			t.Errorf("%s for seq_id 2: %d %v, want 409 naming the seq_id", name, st, m)
		}
	}
	if res := ts.call("optim_step", optim(model, 4, 0.1)); metric(t, res, "datums") != 0 {
		t.Errorf("second optim_step: %v datums, want 0 (the gradient was cleared)", metric(t, res, "datums"))
	}
	// A new server-side client (say, restarted) replays an old seq_id.
	if again := ts.mustPost("forward_backward", fwdBwd(model, 1, "importance_sampling", nil, d)); again["request_id"] != fb1["request_id"] {
		t.Errorf("replay of seq_id 1 after later steps: %v, want %v", again["request_id"], fb1["request_id"])
	}
}

func TestBadInput(t *testing.T) {
	ts := newTestServer(t, Config{})
	model := ts.newModel()
	good := func() *tdatum { return newDatum([]int{0, 1, 2, 3, 1}, 1, -1, 1) }
	shifted := good()
	shifted.targetsOverride = []int{2, 3, 1, 0}
	short := good()
	short.advs = short.advs[:2]
	short.shape = nil
	noAdv := good()
	noAdv.dropField = "advantages"
	dtype := good()
	dtype.badDtype = "weights"
	shape := good()
	shape.shape = []int{2, 2}
	// Refused at the door (400 or 404): the body cannot be read, or names
	// no model or seq_id.
	for _, c := range []struct {
		name  string
		route string
		body  any
		want  int
		in    []string // the detail names these
	}{
		{"bad JSON", "forward_backward", []byte(`{"model_id": `), 400, []string{"invalid JSON"}},
		{"empty body", "optim_step", []byte(``), 400, []string{"empty body"}},
		{"unknown model", "forward_backward", fwdBwd("model_77", 1, "ppo", nil, good()), 404, []string{"model_77"}},
		{"no seq_id", "optim_step", map[string]any{"adam_params": map[string]any{}, "model_id": model}, 400, []string{"seq_id"}},
		{"seq_id 0", "optim_step", optim(model, 0, 0.1), 400, []string{"seq_id 0"}},
		{"unknown session", "create_model", map[string]any{"session_id": "nope", "base_model": testBase}, 404, []string{"nope"}},
		{"unknown model info", "get_info", map[string]any{"model_id": "nope"}, 404, []string{"nope"}},
		{"unknown session heartbeat", "session_heartbeat", map[string]any{"session_id": "nope"}, 404, []string{"nope"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, m := ts.post(c.route, c.body)
			detail, _ := m["detail"].(string)
			if st != c.want {
				t.Fatalf("status %d, want %d (%v)", st, c.want, m)
			}
			for _, s := range c.in {
				if !strings.Contains(detail, s) {
					t.Errorf("detail %q does not name %q", detail, s)
				}
			}
		})
	}
	// Read but refused: each takes its seq_id, and its future fails with
	// category user naming what is wrong, so the next seq_id runs.
	seq := 0
	next := func() int { seq++; return seq }
	for _, c := range []struct {
		name  string
		route string
		body  func(seq int) any
		in    []string
	}{
		{"misaligned", "forward_backward", func(n int) any { return fwdBwd(model, n, "ppo", nil, good(), shifted) }, []string{"datum 1", "target_tokens[0]", "misaligned"}},
		{"wrong length", "forward_backward", func(n int) any { return fwdBwd(model, n, "ppo", nil, short) }, []string{"datum 0", "advantages", "2 values for 4"}},
		{"missing field", "forward_backward", func(n int) any { return fwdBwd(model, n, "importance_sampling", nil, noAdv) }, []string{"datum 0", "advantages: missing"}},
		{"dtype", "forward_backward", func(n int) any { return fwdBwd(model, n, "ppo", nil, dtype) }, []string{"datum 0", "weights.dtype"}},
		{"shape", "forward_backward", func(n int) any { return fwdBwd(model, n, "ppo", nil, shape) }, []string{"datum 0", "shape"}},
		{"unknown loss", "forward_backward", func(n int) any { return fwdBwd(model, n, "dpo", nil, good()) }, []string{"dpo"}},
		{"bad clip", "forward_backward", func(n int) any {
			return fwdBwd(model, n, "ppo", map[string]float64{"clip_low_threshold": 0.2, "clip_high_threshold": 0.2}, good())
		}, []string{"clip_high_threshold"}},
		{"bad beta", "optim_step", func(n int) any {
			return map[string]any{"adam_params": map[string]any{"beta1": 1.5}, "model_id": model, "seq_id": n}
		}, []string{"adam_params.beta1"}},
		{"no adam", "optim_step", func(n int) any { return map[string]any{"model_id": model, "seq_id": n} }, []string{"adam_params"}},
		{"bad name", "save_weights_for_sampler", func(n int) any { return map[string]any{"model_id": model, "path": "../x", "seq_id": n} }, []string{"../x"}},
		{"load without path", "load_weights", func(n int) any { return map[string]any{"model_id": model, "seq_id": n} }, []string{"path"}},
		{"load unknown", "load_weights", func(n int) any {
			return map[string]any{"model_id": model, "path": "tinker://model_9/weights/x", "seq_id": n}
		}, []string{"tinker://model_9/weights/x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := ts.call(c.route, c.body(next()))
			detail, _ := res["error"].(string)
			if res["category"] != "user" {
				t.Fatalf("answer %v: want a future failed with category user", res)
			}
			for _, s := range c.in {
				if !strings.Contains(detail, s) {
					t.Errorf("error %q does not name %q", detail, s)
				}
			}
		})
	}
	// The refused requests' seq_ids are spent: the next one runs.
	if res := ts.call("forward_backward", fwdBwd(model, next(), "ppo", nil, good())); res["error"] != nil {
		t.Fatalf("after the refused requests: %v", res)
	}
}

func TestSaveWithoutDirectoryFails(t *testing.T) {
	ts := newTestServer(t, Config{CheckpointDir: noCheckpoints})
	model := ts.newModel()
	res := ts.call("save_weights_for_sampler", map[string]any{"model_id": model, "path": "a", "seq_id": 1})
	if res["category"] != "user" || !strings.Contains(res["error"].(string), "checkpoint directory") {
		t.Errorf("save without a directory: %v", res)
	}
}
