package llm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// renderResp is the GenerateRequest the render routes answer.
type renderResp struct {
	RequestID      string         `json:"request_id"`
	TokenIDs       []int          `json:"token_ids"`
	SamplingParams map[string]any `json:"sampling_params"`
	Model          string         `json:"model"`
}

type generateResp struct {
	RequestID string `json:"request_id"`
	Choices   []struct {
		Index        int     `json:"index"`
		TokenIDs     []int   `json:"token_ids"`
		FinishReason *string `json:"finish_reason"`
		Logprobs     *struct {
			Content []struct {
				Token       string  `json:"token"`
				Logprob     float64 `json:"logprob"`
				Bytes       []int   `json:"bytes"`
				TopLogprobs []struct {
					Token string `json:"token"`
				} `json:"top_logprobs"`
			} `json:"content"`
		} `json:"logprobs"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func decodeOK(t *testing.T, status int, b []byte, v any) {
	t.Helper()
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

// render posts msgs to /v1/chat/completions/render and returns the ids.
func render(t *testing.T, url string, msgs []map[string]any, tools any) []int {
	t.Helper()
	var r renderResp
	st, _, b := post(t, url+"/v1/chat/completions/render", map[string]any{"model": DefaultModel, "messages": msgs, "tools": tools, "max_tokens": 50})
	decodeOK(t, st, b, &r)
	return r.TokenIDs
}

// TestTokenRoutesRoundTrip drives one turn the way a token-exact client
// does on current vLLM: render, generate from the ids, derender the ids;
// then renders the conversation with the answer and a tool result appended
// and checks the default template is append-only: the new prompt extends
// prompt + completion (stop token included) exactly.
func TestTokenRoutesRoundTrip(t *testing.T) {
	s, ts := MustServer(t, testConfig(DialectVLLM))
	msgs := userMsg(question)
	var rr renderResp
	st, _, b := post(t, ts.URL+"/v1/chat/completions/render", map[string]any{"model": DefaultModel, "messages": msgs, "tools": researchTools,
		"max_tokens": 300, "seed": 5, "logprobs": true, "top_logprobs": 2, "temperature": 0.7})
	decodeOK(t, st, b, &rr)
	if !strings.HasPrefix(rr.RequestID, "chatcmpl-") || rr.Model != DefaultModel {
		t.Errorf("request_id %q model %q", rr.RequestID, rr.Model)
	}
	sp := rr.SamplingParams
	if sp["max_tokens"] != 300.0 || sp["seed"] != 5.0 || sp["logprobs"] != 2.0 || sp["temperature"] != 0.7 || sp["n"] != 1.0 {
		t.Errorf("sampling_params %v", sp)
	}
	var tk struct {
		Tokens []int `json:"tokens"`
	}
	st, _, b = post(t, ts.URL+"/tokenize", map[string]any{"model": DefaultModel, "messages": msgs, "tools": researchTools})
	decodeOK(t, st, b, &tk)
	if !slices.Equal(tk.Tokens, rr.TokenIDs) {
		t.Fatalf("render ids differ from /tokenize ids:\n%v\n%v", rr.TokenIDs, tk.Tokens)
	}

	// The render answer is a valid generate body as it stands.
	st, _, b = post(t, ts.URL+"/inference/v1/generate", b2m(t, rr))
	var gr generateResp
	decodeOK(t, st, b, &gr)
	if len(gr.Choices) != 1 {
		t.Fatalf("choices: %s", b)
	}
	c := gr.Choices[0]
	im := s.Tokenizer().SpecialID(IMEnd)
	if len(c.TokenIDs) == 0 || c.TokenIDs[len(c.TokenIDs)-1] != im || c.FinishReason == nil || *c.FinishReason != "stop" {
		t.Fatalf("want ids ending with <|im_end|> and finish stop: %s", b)
	}
	if c.Logprobs == nil || len(c.Logprobs.Content) != len(c.TokenIDs) {
		t.Fatalf("want one logprob per id: %s", b)
	}
	for i, e := range c.Logprobs.Content {
		if want := "token_id:" + itoa(c.TokenIDs[i]); e.Token != want || e.Bytes != nil || len(e.TopLogprobs) != 2 || e.TopLogprobs[0].Token != want {
			t.Fatalf("logprobs[%d] = %+v, want token %s, bytes null, 2 alternatives, sampled first", i, e, want)
		}
	}
	if gr.Usage.PromptTokens != len(rr.TokenIDs) || gr.Usage.CompletionTokens != len(c.TokenIDs) {
		t.Errorf("usage %+v", gr.Usage)
	}
	// Same request on the chat route samples the same ids.
	var chat struct {
		Choices []struct {
			TokenIDs []int `json:"token_ids"`
		} `json:"choices"`
		PromptTokenIDs []int `json:"prompt_token_ids"`
	}
	st, _, b = post(t, ts.URL+"/v1/chat/completions", map[string]any{"model": DefaultModel, "messages": msgs, "tools": researchTools,
		"max_tokens": 300, "seed": 5, "temperature": 0.7, "return_token_ids": true})
	decodeOK(t, st, b, &chat)
	if !slices.Equal(chat.PromptTokenIDs, rr.TokenIDs) || !slices.Equal(chat.Choices[0].TokenIDs, c.TokenIDs) {
		t.Errorf("chat route: prompt or completion ids differ from render + generate")
	}

	// Derender parses the ids like the chat route.
	var dr struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				Reasoning *string `json:"reasoning"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	st, _, b = post(t, ts.URL+"/v1/chat/completions/derender", map[string]any{"model": DefaultModel, "generate_response": json.RawMessage(mustMarshal(t, gr)),
		"prompt_tokens": len(rr.TokenIDs), "chat_request": map[string]any{"model": DefaultModel, "messages": msgs, "tools": researchTools}})
	decodeOK(t, st, b, &dr)
	m := dr.Choices[0].Message
	if dr.Object != "chat.completion" || m.Reasoning == nil || *m.Reasoning == "" || len(m.ToolCalls) == 0 || dr.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("derender: want reasoning and tool calls: %s", b)
	}
	if dr.Usage.PromptTokens != len(rr.TokenIDs) || dr.Usage.CompletionTokens != len(c.TokenIDs) {
		t.Errorf("derender usage %+v", dr.Usage)
	}
	// Without tools in chat_request the call stays text, as vLLM's.
	st, _, b = post(t, ts.URL+"/v1/chat/completions/derender", map[string]any{"model": DefaultModel, "generate_response": json.RawMessage(mustMarshal(t, gr))})
	if st != http.StatusOK || !strings.Contains(string(b), `\u003ctool_call\u003e`) && !strings.Contains(string(b), "<tool_call>") {
		t.Errorf("derender without tools: want the call as text: %d %s", st, b)
	}

	// Next turn: the answer sent back, a tool result appended.
	call := m.ToolCalls[0]
	next := append(slices.Clone(msgs),
		map[string]any{"role": "assistant", "content": m.Content, "reasoning": *m.Reasoning, "tool_calls": []map[string]any{{"id": call.ID, "type": "function",
			"function": map[string]any{"name": call.Function.Name, "arguments": call.Function.Arguments}}}},
		map[string]any{"role": "tool", "tool_call_id": call.ID, "content": "Velmora Labs was founded by Ada Quill.\n"})
	full := render(t, ts.URL, next, researchTools)
	seq := append(slices.Clone(rr.TokenIDs), c.TokenIDs...)
	if len(full) <= len(seq) || !slices.Equal(full[:len(seq)], seq) {
		t.Fatalf("default template: the next prompt does not extend prompt + completion")
	}
	// Generating from the continued ids works like from a rendered prompt.
	st, _, b = post(t, ts.URL+"/inference/v1/generate", map[string]any{"token_ids": full, "sampling_params": map[string]any{"max_tokens": 20}})
	var g2 generateResp
	decodeOK(t, st, b, &g2)
	if len(g2.Choices[0].TokenIDs) == 0 || len(g2.Choices[0].TokenIDs) > 20 {
		t.Errorf("second turn: %s", b)
	}
}

// TestTokensGenerateStream checks the streamed tokens route sends the same
// ids one per event, the finish reason on the last, usage when asked.
func TestTokensGenerateStream(t *testing.T) {
	_, ts := MustServer(t, testConfig(DialectVLLM))
	ids := render(t, ts.URL, userMsg(question), plannerTools)
	body := map[string]any{"token_ids": ids, "sampling_params": map[string]any{"seed": 9, "logprobs": 0}}
	var whole generateResp
	st, _, b := post(t, ts.URL+"/inference/v1/generate", body)
	decodeOK(t, st, b, &whole)
	body["stream"] = true
	body["stream_options"] = map[string]any{"include_usage": true}
	st, _, b = post(t, ts.URL+"/inference/v1/generate", body)
	if st != http.StatusOK {
		t.Fatalf("%d %s", st, b)
	}
	var got []int
	var finish []string
	usage, done := false, false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			continue
		}
		var ch generateResp
		if err := json.Unmarshal([]byte(line), &ch); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if len(ch.Choices) == 0 {
			usage = ch.Usage.CompletionTokens == len(whole.Choices[0].TokenIDs)
			continue
		}
		got = append(got, ch.Choices[0].TokenIDs...)
		if f := ch.Choices[0].FinishReason; f != nil {
			finish = append(finish, *f)
		}
		if ch.Choices[0].Logprobs == nil || len(ch.Choices[0].Logprobs.Content) != 1 {
			t.Fatalf("want one logprob per event: %s", line)
		}
	}
	if !slices.Equal(got, whole.Choices[0].TokenIDs) || !slices.Equal(finish, []string{"stop"}) || !usage || !done {
		t.Errorf("stream ids equal %v, finish %v, usage %v, done %v", slices.Equal(got, whole.Choices[0].TokenIDs), finish, usage, done)
	}
}

// TestTokensGenerateBadInput checks the tokens route's errors name the
// field.
func TestTokensGenerateBadInput(t *testing.T) {
	_, ts := MustServer(t, testConfig(DialectVLLM))
	for _, tc := range []struct {
		body any
		want string
	}{
		{map[string]any{"sampling_params": map[string]any{}}, "token_ids"},
		{map[string]any{"token_ids": []int{1, 2}}, "sampling_params"},
		{map[string]any{"token_ids": []int{1, 1 << 30}, "sampling_params": map[string]any{}}, "out of vocabulary"},
		{map[string]any{"token_ids": []int{1}, "sampling_params": map[string]any{"temperature": -1}}, "temperature"},
		{map[string]any{"token_ids": []int{1}, "sampling_params": map[string]any{}, "model": "other"}, "does not exist"},
	} {
		st, _, b := post(t, ts.URL+"/inference/v1/generate", tc.body)
		if st < 400 || !strings.Contains(string(b), tc.want) {
			t.Errorf("%v: %d %s, want an error naming %q", tc.body, st, b, tc.want)
		}
	}
}

// TestCompletionsRender checks /v1/completions/render answers one
// GenerateRequest per prompt, text tokenized and ids kept.
func TestCompletionsRender(t *testing.T) {
	s, ts := MustServer(t, testConfig(DialectVLLM))
	var out []renderResp
	st, _, b := post(t, ts.URL+"/v1/completions/render", map[string]any{"model": DefaultModel, "prompt": []string{"hello world", "two"}})
	decodeOK(t, st, b, &out)
	if len(out) != 2 || !slices.Equal(out[0].TokenIDs, s.Tokenizer().Encode("hello world")) || out[0].SamplingParams["max_tokens"] != 16.0 || !strings.HasPrefix(out[1].RequestID, "cmpl-") {
		t.Errorf("text prompts: %s", b)
	}
	st, _, b = post(t, ts.URL+"/v1/completions/render", map[string]any{"model": DefaultModel, "prompt": []int{5, 6, 7}, "max_tokens": 3})
	decodeOK(t, st, b, &out)
	if len(out) != 1 || !slices.Equal(out[0].TokenIDs, []int{5, 6, 7}) || out[0].SamplingParams["max_tokens"] != 3.0 {
		t.Errorf("id prompt: %s", b)
	}
	var d struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	ids := s.Tokenizer().Encode("some text")
	st, _, b = post(t, ts.URL+"/v1/completions/derender", map[string]any{"model": DefaultModel, "generate_response": map[string]any{"choices": []map[string]any{{"index": 0, "token_ids": ids}}}})
	decodeOK(t, st, b, &d)
	if len(d.Choices) != 1 || d.Choices[0].Text != "some text" {
		t.Errorf("completions derender: %s", b)
	}
}

// TestRouteFamiliesOff checks each route family can be turned off: its
// routes answer 404 like a server without them, and a token-id prompt gets
// a 400 saying to send text.
func TestRouteFamiliesOff(t *testing.T) {
	ids := []int{1, 2, 3}
	gen := map[string]any{"token_ids": ids, "sampling_params": map[string]any{}}
	cases := []struct {
		dialect, families string
		path              string
		body              any
		want              int
	}{
		{DialectVLLM, "", "/v1/chat/completions/render", chatBody(nil), 200},
		{DialectVLLM, "render", "/v1/chat/completions/render", chatBody(nil), 404},
		{DialectVLLM, "render", "/v1/completions/render", map[string]any{"prompt": "x"}, 404},
		{DialectVLLM, "", "/inference/v1/generate", gen, 200},
		{DialectVLLM, "generate", "/inference/v1/generate", gen, 404},
		{DialectVLLM, "derender", "/v1/chat/completions/derender", map[string]any{"model": DefaultModel, "generate_response": map[string]any{"choices": []any{}}}, 404},
		{DialectVLLM, "tokenize", "/tokenize", map[string]any{"prompt": "x"}, 404},
		{DialectVLLM, "tokenize", "/detokenize", map[string]any{"tokens": ids}, 404},
		{DialectVLLM, "", "/v1/completions", map[string]any{"prompt": ids, "max_tokens": 2}, 200},
		{DialectVLLM, "token-prompt", "/v1/completions", map[string]any{"prompt": ids, "max_tokens": 2}, 400},
		{DialectVLLM, "token-prompt", "/v1/completions", map[string]any{"prompt": "text", "max_tokens": 2}, 200},
		{DialectVLLM, "all", "/v1/chat/completions", chatBody(nil), 200},
		{DialectSGLang, "", "/v1/chat/completions/render", chatBody(nil), 404},
		{DialectSGLang, "", "/inference/v1/generate", gen, 404},
		{DialectSGLang, "generate", "/generate", map[string]any{"input_ids": ids}, 404},
		{DialectSGLang, "tokenize", "/v1/tokenize", map[string]any{"prompt": "x"}, 404},
		{DialectSGLang, "token-prompt", "/generate", map[string]any{"input_ids": ids}, 400},
		{DialectSGLang, "token-prompt", "/generate", map[string]any{"text": "x"}, 200},
	}
	for _, tc := range cases {
		cfg := testConfig(tc.dialect)
		off, err := ParseRouteFamilies(tc.families)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Disabled = off
		_, ts := MustServer(t, cfg)
		st, _, b := post(t, ts.URL+tc.path, tc.body)
		if st != tc.want {
			t.Errorf("%s without %q: %s: %d %s, want %d", tc.dialect, tc.families, tc.path, st, b, tc.want)
		}
		if tc.want == 400 && !strings.Contains(string(b), "send text") {
			t.Errorf("%s: %s: want the error to say to send text: %s", tc.dialect, tc.path, b)
		}
	}
	if _, err := ParseRouteFamilies("render,bogus"); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("ParseRouteFamilies(bogus) = %v, want an error naming it", err)
	}
	if f, _ := ParseRouteFamilies("generate, render"); f.String() != "render,generate" {
		t.Errorf("String = %q", f.String())
	}
}

func b2m(t *testing.T, v any) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(mustMarshal(t, v), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func itoa(i int) string { return strings.TrimSpace(string(mustMarshalInt(i))) }

func mustMarshalInt(i int) []byte { b, _ := json.Marshal(i); return b }

// TestGenerationLog checks the log holds every sampled sequence of every
// route, with the ids and logprobs the responses carried.
func TestGenerationLog(t *testing.T) {
	cfg := testConfig(DialectVLLM)
	cfg.RecordGenerations = true
	s, ts := MustServer(t, cfg)
	ids := render(t, ts.URL, userMsg(question), plannerTools)
	var gr generateResp
	st, _, b := post(t, ts.URL+"/inference/v1/generate", map[string]any{"token_ids": ids, "sampling_params": map[string]any{"logprobs": 0, "n": 2}})
	decodeOK(t, st, b, &gr)
	post(t, ts.URL+"/v1/chat/completions", chatBody(map[string]any{"stream": true}))
	log := s.Generations()
	if len(log) != 3 {
		t.Fatalf("log has %d entries, want 3 (two choices, one stream)", len(log))
	}
	for i, c := range gr.Choices {
		e := log[i]
		if e.Route != "/inference/v1/generate" || !slices.Equal(e.PromptIDs, ids) || !slices.Equal(e.IDs, c.TokenIDs) || len(e.Logprobs) != len(c.TokenIDs) {
			t.Errorf("log[%d] = %+v, want the choice's ids and logprobs", i, e)
		}
		for k, lp := range c.Logprobs.Content {
			if lp.Logprob != e.Logprobs[k] {
				t.Errorf("log[%d] logprob %d = %v, response %v", i, k, e.Logprobs[k], lp.Logprob)
			}
		}
	}
	if log[2].Route != "/v1/chat/completions" || log[2].Logprobs != nil || !slices.Equal(log[2].PromptIDs, ids) {
		t.Errorf("log[2] = %+v", log[2])
	}
	st, b = get(t, ts.URL+"/sim/generations")
	var wire []Generation
	decodeOK(t, st, b, &wire)
	if len(wire) != 3 {
		t.Errorf("GET /sim/generations: %d entries", len(wire))
	}
	if _, ts2 := MustServer(t, testConfig(DialectVLLM)); true {
		if st, _ := get(t, ts2.URL+"/sim/generations"); st != http.StatusNotFound {
			t.Errorf("without RecordGenerations: /sim/generations answered %d", st)
		}
	}
}
