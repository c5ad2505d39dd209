package llm

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// respToolCall is a tool call in a chat answer's message.
type respToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatResp struct {
	PromptTokenIDs []int `json:"prompt_token_ids"`
	Choices        []struct {
		Message struct {
			Content          *string        `json:"content"`
			ReasoningContent *string        `json:"reasoning_content"`
			Reasoning        *string        `json:"reasoning"`
			ToolCalls        []respToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
		TokenIDs     []int  `json:"token_ids"`
	} `json:"choices"`
}

func chatBody(extra map[string]any) map[string]any {
	b := map[string]any{"messages": userMsg(question), "tools": plannerTools}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

func TestSameSeedByteIdentical(t *testing.T) {
	run := func() [][]byte {
		_, ts := MustServer(t, testConfig(DialectVLLM))
		var out [][]byte
		for i := 0; i < 3; i++ {
			_, _, b := post(t, ts.URL+"/v1/chat/completions", chatBody(map[string]any{"return_token_ids": true, "logprobs": true}))
			out = append(out, b)
		}
		return out
	}
	a, b := run(), run()
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Errorf("request %d: responses differ across identical runs", i)
		}
	}
}

func TestTemperatureZeroIgnoresSeeds(t *testing.T) {
	var first []byte
	for _, seed := range []uint64{1, 2, 99} {
		cfg := testConfig(DialectVLLM)
		cfg.Seed = seed
		_, ts := MustServer(t, cfg)
		_, _, b := post(t, ts.URL+"/v1/chat/completions", chatBody(map[string]any{"temperature": 0, "seed": seed, "return_token_ids": true}))
		var r chatResp
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		ids, _ := json.Marshal(r.Choices[0].TokenIDs)
		if first == nil {
			first = ids
		} else if !bytes.Equal(first, ids) {
			t.Errorf("seed %d: greedy output differs: %s vs %s", seed, ids, first)
		}
	}
}

func TestKRolloutsDiffer(t *testing.T) {
	_, ts := MustServer(t, testConfig(DialectVLLM))
	seen := map[string]bool{}
	for k := 0; k < 8; k++ {
		_, _, b := post(t, ts.URL+"/v1/chat/completions", chatBody(map[string]any{"temperature": 1, "return_token_ids": true}))
		var r chatResp
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		ids, _ := json.Marshal(r.Choices[0].TokenIDs)
		seen[string(ids)] = true
	}
	if len(seen) < 2 {
		t.Errorf("8 rollouts at T=1 all ended the same")
	}
}

// replay runs a planner conversation through the HTTP API, feeding back
// each assistant message and a tool result, and reports whether every
// turn's prompt extends the previous prompt and completion.
func replay(t *testing.T, cfg Config) (extends bool, turns int) {
	_, ts := MustServer(t, cfg)
	msgs := []map[string]any{{"role": "user", "content": question}}
	results := []string{"The founder of Velmora Labs is Ida Kestrel.", "The birth city of Ida Kestrel is Orvane."}
	var prev []int
	extends = true
	for turn := 0; turn < 4; turn++ {
		st, _, b := post(t, ts.URL+"/v1/chat/completions", map[string]any{"messages": msgs, "tools": plannerTools, "temperature": 0, "return_token_ids": true})
		if st != 200 {
			t.Fatalf("turn %d: %d %s", turn, st, b)
		}
		var r chatResp
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if prev != nil && !hasPrefix(r.PromptTokenIDs, prev) {
			extends = false
		}
		c := r.Choices[0]
		prev = append(append([]int(nil), r.PromptTokenIDs...), c.TokenIDs...)
		turns++
		asst := map[string]any{"role": "assistant", "content": c.Message.Content}
		if c.Message.ReasoningContent != nil {
			asst["reasoning_content"] = *c.Message.ReasoningContent
		}
		if c.Message.Reasoning != nil {
			asst["reasoning"] = *c.Message.Reasoning
		}
		if len(c.Message.ToolCalls) == 0 {
			break
		}
		asst["tool_calls"] = c.Message.ToolCalls
		msgs = append(msgs, asst)
		for _, tc := range c.Message.ToolCalls {
			res := "Nothing found."
			if turn < len(results) {
				res = results[turn]
			}
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": tc.ID, "content": res})
		}
	}
	return extends, turns
}

func hasPrefix(a, p []int) bool {
	if len(p) > len(a) {
		return false
	}
	for i := range p {
		if a[i] != p[i] {
			return false
		}
	}
	return true
}

func TestChatReplayPrefix(t *testing.T) {
	ok, turns := replay(t, testConfig(DialectVLLM))
	if turns < 2 {
		t.Fatalf("conversation had %d turns, want a multi-turn tool-calling run", turns)
	}
	if !ok {
		t.Errorf("a turn's prompt does not extend the previous prompt + completion")
	}
	cfg := testConfig(DialectVLLM)
	cfg.StripReasoning = true
	if ok, _ := replay(t, cfg); ok {
		t.Errorf("with StripReasoning and reasoning present, the prefix property should break")
	}
}

func TestFaultRates(t *testing.T) {
	cfg := testConfig(DialectVLLM)
	cfg.Faults = Faults{Rate500: 0.05, Rate503: 0.04, Rate429: 0.03, RateDrop: 0.02, RateMalformed: 0.03, RateStall: 0.02, StallDuration: time.Microsecond}
	_, ts := MustServer(t, cfg)
	const n = 10000
	body, _ := json.Marshal(map[string]any{"prompt": "Hi", "max_tokens": 1})
	counts := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan int)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				kind := classify(client, ts.URL+"/v1/completions", body)
				mu.Lock()
				counts[kind]++
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	// A stall with a duration is served normally after it, so it is
	// counted by the server's metrics rather than observed.
	want := map[string]float64{"500": 0.05, "503": 0.04, "429": 0.03, "drop": 0.02, "malformed": 0.03}
	for kind, p := range want {
		sigma := math.Sqrt(n * p * (1 - p))
		if got := float64(counts[kind]); math.Abs(got-n*p) > 4*sigma {
			t.Errorf("%s: observed %v of %d, want %v ± %.0f", kind, got, n, n*p, 4*sigma)
		}
	}
	if counts["other"] > 0 {
		t.Errorf("%d responses were neither OK nor an injected fault", counts["other"])
	}
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	var stalls float64
	re := regexp.MustCompile(`sim:injected_faults_total\{kind="stall",[^}]*\} (\S+)`)
	m := re.FindSubmatch(metrics)
	if m == nil {
		t.Fatalf("no stall counter in /metrics:\n%s", metrics)
	}
	stalls, _ = strconv.ParseFloat(string(m[1]), 64)
	p := cfg.Faults.RateStall
	if sigma := math.Sqrt(n * p * (1 - p)); math.Abs(stalls-n*p) > 4*sigma {
		t.Errorf("stall: injected %v of %d, want %v ± %.0f", stalls, n, n*p, 4*sigma)
	}
}

// classify sends one request and names what came back.
func classify(c *http.Client, url string, body []byte) string {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return "drop"
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return "drop"
	}
	switch resp.StatusCode {
	case 500:
		return "500"
	case 503:
		return "503"
	case 429:
		if resp.Header.Get("Retry-After") == "" {
			return "other"
		}
		return "429"
	case 200:
		if !json.Valid(buf.Bytes()) {
			return "malformed"
		}
		return "ok"
	}
	return "other"
}

func TestBadInput(t *testing.T) {
	cfg := testConfig(DialectVLLM)
	cfg.MaxModelLen = 300
	_, ts := MustServer(t, cfg)
	cfgS := testConfig(DialectSGLang)
	cfgS.MaxModelLen = 300
	_, tsS := MustServer(t, cfgS)
	long := strings.Repeat("word ", 400)
	tests := []struct {
		name, url, path string
		body            any
		status          int
		want            string
	}{
		{"malformed json", ts.URL, "/v1/chat/completions", `{"messages": [`, 400, `"type":"BadRequestError"`},
		{"wrong type", ts.URL, "/v1/chat/completions", `{"messages": "hi"}`, 400, `"code":400`},
		{"unknown model", ts.URL, "/v1/chat/completions", map[string]any{"model": "gpt-9", "messages": userMsg("hi")}, 404, `"message":"The model ` + "`gpt-9`" + ` does not exist.","type":"NotFoundError","param":null,"code":404`},
		{"empty messages", ts.URL, "/v1/chat/completions", map[string]any{"messages": []any{}}, 400, `BadRequestError`},
		{"n zero", ts.URL, "/v1/chat/completions", map[string]any{"messages": userMsg("hi"), "n": 0}, 400, `n must be at least 1, got 0.`},
		{"negative temperature", ts.URL, "/v1/chat/completions", map[string]any{"messages": userMsg("hi"), "temperature": -1}, 400, `temperature must be non-negative, got -1.`},
		{"prompt over context", ts.URL, "/v1/chat/completions", map[string]any{"messages": userMsg(long)}, 400, `This model's maximum context length is 300 tokens. However, your request has`},
		{"max_tokens over context", ts.URL, "/v1/chat/completions", map[string]any{"messages": userMsg("hi"), "max_tokens": 1000}, 400, `'max_tokens' or 'max_completion_tokens' is too large: 1000.`},
		{"ids out of vocab", ts.URL, "/v1/completions", map[string]any{"prompt": []int{1, 99999999}}, 400, `Token id 99999999 is out of vocabulary`},
		{"top_logprobs without logprobs", ts.URL, "/v1/chat/completions", map[string]any{"messages": userMsg("hi"), "top_logprobs": 2}, 400, "`logprobs` must be set to true"},
		{"unknown route", ts.URL, "/v2/nothing", map[string]any{}, 404, `{"detail":"Not Found"}`},
		{"sglang flat error", tsS.URL, "/v1/chat/completions", map[string]any{"messages": userMsg("hi"), "n": 0}, 400, `{"object":"error","message":"n must be at least 1, got 0.","type":"BadRequestError","param":null,"code":400}`},
		{"sglang generate native error", tsS.URL, "/generate", map[string]any{"text": long}, 400, `{"error":{"message":"The input (`},
		{"sglang stream prompt ids", tsS.URL, "/v1/chat/completions", map[string]any{"messages": userMsg("hi"), "stream": true, "return_prompt_token_ids": true}, 400, `Please set stream=false`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _, b := post(t, tc.url+tc.path, tc.body)
			if st != tc.status || !strings.Contains(string(b), tc.want) {
				t.Errorf("got %d %s, want %d containing %s", st, b, tc.status, tc.want)
			}
		})
	}
	strict := testConfig(DialectVLLM)
	strict.Strict = true
	_, tsStrict := MustServer(t, strict)
	if st, _, b := post(t, tsStrict.URL+"/v1/chat/completions", map[string]any{"messages": userMsg("hi"), "bogus": 1}); st != 400 {
		t.Errorf("strict unknown field: got %d %s, want 400", st, b)
	}
	if st, _, _ := post(t, ts.URL+"/v1/chat/completions", map[string]any{"messages": userMsg("hi"), "bogus": 1, "max_tokens": 3}); st != 200 {
		t.Errorf("lenient unknown field: got %d, want 200", st)
	}
}

func TestControlVLLM(t *testing.T) {
	s, ts := MustServer(t, testConfig(DialectVLLM))
	if st, _, b := post(t, ts.URL+"/pause?mode=keep", ""); st != 200 || string(b) != `{"status":"paused"}` {
		t.Fatalf("pause: %d %s", st, b)
	}
	if _, b := get(t, ts.URL+"/is_paused"); string(b) != `{"is_paused":true}` {
		t.Errorf("is_paused: %s", b)
	}
	done := make(chan int, 1)
	go func() {
		resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`))
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	deadline := time.Now().Add(5 * time.Second)
	for s.eng.waiting.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	_, metrics := get(t, ts.URL+"/metrics")
	if !strings.Contains(string(metrics), `vllm:num_requests_waiting{model_name="sim-qwen3"} 1.0`) {
		t.Errorf("metrics while paused:\n%s", metrics)
	}
	select {
	case st := <-done:
		t.Fatalf("request finished (%d) while paused", st)
	default:
	}
	post(t, ts.URL+"/resume", "")
	if st := <-done; st != 200 {
		t.Errorf("after resume: status %d", st)
	}
	post(t, ts.URL+"/sleep?level=1", "")
	if _, b := get(t, ts.URL+"/is_sleeping"); string(b) != `{"is_sleeping":true}` {
		t.Errorf("is_sleeping: %s", b)
	}
	post(t, ts.URL+"/wake_up", "")
	if st, _, _ := post(t, ts.URL+"/reset_prefix_cache", ""); st != 200 {
		t.Errorf("reset_prefix_cache: %d", st)
	}
	_, h, _ := post(t, ts.URL+"/v1/chat/completions", map[string]any{"messages": userMsg("hi"), "max_tokens": 2})
	if h.Get("X-Weight-Version") != DefaultWeightVersion {
		t.Errorf("X-Weight-Version = %q", h.Get("X-Weight-Version"))
	}
	_, metrics = get(t, ts.URL+"/metrics")
	for _, want := range []string{"# TYPE vllm:num_requests_running gauge", `vllm:kv_cache_usage_perc{model_name="sim-qwen3"} 0.0`, `vllm:request_success_total{finished_reason="length",model_name="sim-qwen3"} 2.0`, "vllm:generation_tokens_total"} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %q:\n%s", want, metrics)
		}
	}
}

func TestControlSGLang(t *testing.T) {
	_, ts := MustServer(t, testConfig(DialectSGLang))
	st, _, b := post(t, ts.URL+"/update_weights_from_disk", map[string]any{"model_path": "/ckpt/step-3", "weight_version": "step-3"})
	if st != 200 || string(b) != `{"success":true,"message":"Succeeded to update model weights. Weight version updated to step-3.","num_paused_requests":0}` {
		t.Fatalf("update: %d %s", st, b)
	}
	if _, b := get(t, ts.URL+"/get_weight_version"); string(b) != `{"weight_version":"step-3"}` {
		t.Errorf("get_weight_version: %s", b)
	}
	_, _, b = post(t, ts.URL+"/generate", map[string]any{"text": "Hi", "sampling_params": map[string]any{"max_new_tokens": 2}})
	if !strings.Contains(string(b), `"weight_version":"step-3"`) {
		t.Errorf("generate meta_info lacks the new version: %s", b)
	}
}

func TestConfigValidate(t *testing.T) {
	err := Config{Dialect: "tgi", Slots: -1, CacheBytes: -1, RecomputePerToken: -1, Faults: Faults{Rate500: 0.8, Rate503: 0.5}}.Validate()
	for _, want := range []string{"Dialect", "Slots", "CacheBytes", "RecomputePerToken", "sum"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want mention of %s", err, want)
		}
	}
}

func BenchmarkChatCompletions(b *testing.B) {
	_, ts := MustServer(b, testConfig(DialectVLLM))
	body, _ := json.Marshal(chatBody(map[string]any{"return_token_ids": true, "logprobs": true}))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(ts.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(resp.Body)
			resp.Body.Close()
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "completions/s")
}

// TestStallEndsWhenClientLeaves checks that an unbounded stall lets go of
// its request once the client gives up, so the server can shut down.
func TestStallEndsWhenClientLeaves(t *testing.T) {
	cfg := testConfig(DialectVLLM)
	cfg.Faults = Faults{RateStall: 1}
	_, ts := MustServer(t, cfg)
	client := &http.Client{Timeout: 100 * time.Millisecond}
	body, _ := json.Marshal(map[string]any{"prompt": "Hi", "max_tokens": 1})
	if resp, err := client.Post(ts.URL+"/v1/completions", "application/json", bytes.NewReader(body)); err == nil {
		resp.Body.Close()
		t.Fatalf("a stalled request answered %s", resp.Status)
	}
	done := make(chan struct{})
	go func() { ts.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not shut down: the stalled handler outlived its client")
	}
}
