package llm

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestPauseGenerationSGLang pauses a server decoding one token per 200 ms:
// mode abort ends the running request with finish reason "abort" and its
// first tokens; a request sent while paused waits for /continue_generation
// and then carries the version loaded during the pause.
func TestPauseGenerationSGLang(t *testing.T) {
	cfg := testConfig(DialectSGLang)
	cfg.PerToken = 200 * time.Millisecond
	s, ts := MustServer(t, cfg)
	gen := map[string]any{"text": "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "return_logprob": true,
		"sampling_params": map[string]any{"max_new_tokens": 30, "sampling_seed": 3}}
	send := func() <-chan []byte {
		out := make(chan []byte, 1)
		js, _ := json.Marshal(gen)
		go func() {
			resp, err := http.Post(ts.URL+"/generate", "application/json", bytes.NewReader(js))
			if err != nil {
				out <- []byte(err.Error())
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			out <- b
		}()
		return out
	}
	running := send()
	waitFor(t, func() bool { return s.eng.running.Load() == 1 })
	if st, _, b := post(t, ts.URL+"/pause_generation", map[string]any{"mode": "abort"}); st != 200 || string(b) != `{"message":"Generation paused successfully.","status":"ok"}` {
		t.Fatalf("pause_generation: %d %s", st, b)
	}
	ids, _, finish, _ := generated(t, DialectSGLang, "/generate", <-running)
	if finish != "abort" || len(ids) == 0 || len(ids) >= 30 {
		t.Fatalf("running request: finish %q with %d ids, want abort with some", finish, len(ids))
	}
	queued := send()
	waitFor(t, func() bool { return s.eng.waiting.Load() == 1 })
	if st, _, b := post(t, ts.URL+"/update_weights_from_disk", map[string]any{"model_path": "/ckpt/step-1", "weight_version": "1"}); st != 200 {
		t.Fatalf("update while paused: %d %s", st, b)
	}
	if st, _, b := post(t, ts.URL+"/continue_generation", ""); st != 200 || string(b) != `{"message":"Generation continued successfully.","status":"ok"}` {
		t.Fatalf("continue_generation: %d %s", st, b)
	}
	var g struct {
		MetaInfo struct {
			WeightVersion string `json:"weight_version"`
		} `json:"meta_info"`
	}
	if b := <-queued; json.Unmarshal(b, &g) != nil || g.MetaInfo.WeightVersion != "1" {
		t.Errorf("queued request's answer: %s; want weight_version 1", b)
	}
	if got, want := s.ModelPath(), "/ckpt/step-1"; got != want {
		t.Errorf("ModelPath() = %q, want %q", got, want)
	}
	if st, _, _ := post(t, ts.URL+"/pause_generation", map[string]any{"mode": "later"}); st != 400 {
		t.Errorf("pause_generation with an unknown mode: %d, want 400", st)
	}
}

// TestVLLMDevRoutes checks the vLLM dialect's weight routes, and that
// NoDevMode hides them the way vLLM without VLLM_SERVER_DEV_MODE does.
func TestVLLMDevRoutes(t *testing.T) {
	s, ts := MustServer(t, testConfig(DialectVLLM))
	for _, c := range []struct {
		path string
		body any
		want string
	}{
		{"/pause", "", `{"status":"paused"}`},
		{"/sim/update_weights", map[string]any{"model_path": "/ckpt/step-2", "weight_version": "2"}, `{"status":"updated","weight_version":"2"}`},
		{"/reset_prefix_cache", "", ``},
		{"/resume", "", `{"status":"resumed"}`},
		{"/update_weight_version", map[string]any{"new_version": "3"}, `{"new_version":"3","success":true}`},
	} {
		if st, _, b := post(t, ts.URL+c.path, c.body); st != 200 || string(b) != c.want {
			t.Errorf("POST %s: %d %s, want 200 %s", c.path, st, b, c.want)
		}
	}
	if st, b := get(t, ts.URL+"/weight_info"); st != 200 || string(b) != `{"weight_version":"3"}` {
		t.Errorf("GET /weight_info: %d %s", st, b)
	}
	if s.ModelPath() != "/ckpt/step-2" || s.WeightLoads() != 1 {
		t.Errorf("ModelPath %q, WeightLoads %d; want /ckpt/step-2, 1", s.ModelPath(), s.WeightLoads())
	}

	cfg := testConfig(DialectVLLM)
	cfg.NoDevMode = true
	_, plain := MustServer(t, cfg)
	for _, path := range []string{"/pause", "/resume", "/reset_prefix_cache", "/sim/update_weights", "/sleep"} {
		if st, _, b := post(t, plain.URL+path, ""); st != 404 || string(b) != `{"detail":"Not Found"}` {
			t.Errorf("without dev mode POST %s: %d %s, want 404", path, st, b)
		}
	}
	if _, err := NewServer(Config{Dialect: DialectSGLang, NoDevMode: true}); err == nil {
		t.Error("NoDevMode with the sglang dialect: no error")
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}
