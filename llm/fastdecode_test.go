package llm

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/internal/jsonfast"
)

// okSGLang is a small SGLang chat answer with prompt ids and meta_info.
const okSGLang = `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi","reasoning_content":null,"tool_calls":null},"logprobs":{"content":[{"token":"hi","logprob":-0.5,"bytes":[104,105],"top_logprobs":[]}]},"finish_reason":"stop","matched_stop":2,"prompt_token_ids":[1,2,3],"meta_info":{"id":"x","finish_reason":{"type":"stop","matched":2},"prompt_tokens":3,"completion_tokens":2,"weight_version":"v1","output_token_logprobs":[[-0.5,7,null],[-0.1,2,"<|im_end|>"]]}}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5},"metadata":{"weight_version":"v1"}}`

// okGenerate is a small SGLang /generate answer.
const okGenerate = `{"text":"hi","output_ids":[7,2],"meta_info":{"id":"x","finish_reason":{"type":"stop","matched":2},"prompt_tokens":3,"completion_tokens":2,"weight_version":"v1","output_token_logprobs":[[-0.5,7,null],[-0.1,2,null]]}}`

// checkFastChat fails when fastChat accepts body but disagrees with
// DecodeChatResponse (encoding/json), or accepts what it rejects. It
// reports whether the fast path accepted the body.
func checkFastChat(t *testing.T, body []byte) bool {
	t.Helper()
	accepted := false
	for _, wantTokens := range []bool{false, true} {
		r, fb := fastChat(body, wantTokens, nil)
		resp, ch, err := DecodeChatResponse(body)
		checkFallbacks(t, body, fb)
		if fb.body != "" {
			continue
		}
		accepted = true
		if err != nil {
			t.Fatalf("fast path accepted a body encoding/json rejects (%v): %q", err, body)
		}
		var lps []openai.LogProb
		if ch.LogProbs != nil {
			lps = ch.LogProbs.Content
		}
		if r.logprobs == nil || len(r.logprobs) != len(lps) {
			t.Fatalf("fast path has %d logprobs (nil %v), encoding/json %d: %q", len(r.logprobs), r.logprobs == nil, len(lps), body)
		}
		for i := range lps {
			if r.logprobs[i] != lps[i].LogProb {
				t.Fatalf("logprob %d: fast %v, encoding/json %v", i, r.logprobs[i], lps[i].LogProb)
			}
		}
		if wantTokens {
			if ch.LogProbs != nil && len(r.tokens) != len(lps) {
				t.Fatalf("fast path has %d tokens, encoding/json %d", len(r.tokens), len(lps))
			}
			for i := range lps {
				if r.tokens[i] != lps[i].Token {
					t.Fatalf("token %d: fast %q, encoding/json %q", i, r.tokens[i], lps[i].Token)
				}
			}
		} else if r.tokens != nil {
			t.Fatal("tokens filled without being asked for")
		}
		if r.ch != &r.resp.Choices[0] {
			t.Fatal("choice is not the response's first choice")
		}
		if ch.LogProbs != nil {
			ch.LogProbs.Content = nil
		}
		if !reflect.DeepEqual(r.resp, resp) {
			got, _ := json.Marshal(r.resp)
			want, _ := json.Marshal(resp)
			t.Fatalf("fast path and encoding/json disagree on %q:\nfast %s\njson %s", body, got, want)
		}
	}
	return accepted
}

// checkFallbacks fails when a fast decode's fallbacks are not one of the
// documented reasons or contradict the body: syntax only for invalid
// JSON, shape only for valid JSON, members handed over only when the fast
// decoder took the body.
func checkFallbacks(t *testing.T, body []byte, fb fallbacks) {
	t.Helper()
	switch {
	case fb.body == "":
		return
	case !slices.Contains(fallbackReasons, fb.body) || fb.body == FallbackMessage || fb.body == FallbackMember:
		t.Fatalf("fallback reason %q is not a whole-body reason", fb.body)
	case fb.message || fb.member:
		t.Fatalf("whole body left to encoding/json (%s) with members handed over: %+v", fb.body, fb)
	case fb.body == FallbackSyntax && json.Valid(body):
		t.Fatalf("syntax fallback for valid JSON %q", body)
	case fb.body == FallbackShape && !json.Valid(body):
		t.Fatalf("shape fallback for invalid JSON %q", body)
	}
}

// checkFastGenerate is checkFastChat for /generate answers.
func checkFastGenerate(t *testing.T, body []byte) bool {
	t.Helper()
	g, fb := fastGenerate(body)
	var want GenerateResponse
	err := json.Unmarshal(body, &want)
	checkFallbacks(t, body, fb)
	if fb.body != "" {
		return false
	}
	if err != nil {
		t.Fatalf("fast path accepted a body encoding/json rejects (%v): %q", err, body)
	}
	if !reflect.DeepEqual(*g, want) {
		t.Fatalf("fast path and encoding/json disagree on %q:\nfast %+v\njson %+v", body, *g, want)
	}
	return true
}

// fastCase is a body around the fast path's edges: accept says whether it
// must take it (false: it must leave it to encoding/json).
type fastCase struct {
	name   string
	body   string
	accept bool
}

// fastCases are the fast path's edge cases (see fastCaseFallbacks for why
// it leaves some to encoding/json).
var fastCases = []fastCase{
	{"vllm", okVLLM, true},
	{"sglang", okSGLang, true},
	{"spaces", strings.ReplaceAll(okVLLM, ",", " ,\n\t"), true},
	{"escaped token", strings.Replace(okVLLM, `"token":"hi"`, `"token":"h\u0069\n"`, 1), true},
	{"utf8 token", strings.Replace(okVLLM, `"token":"hi"`, `"token":"héllo"`, 1), true},
	{"invalid utf8 token", strings.Replace(okVLLM, `"token":"hi"`, "\"token\":\"h\xffi\"", 1), true},
	{"null token", strings.Replace(okVLLM, `"token":"hi"`, `"token":null`, 1), true},
	{"no logprobs", strings.Replace(okVLLM, `"logprobs":{"content":[{"token":"hi","logprob":-0.5,"bytes":[104,105],"top_logprobs":[]},{"token":"<|im_end|>","logprob":-0.1,"bytes":[],"top_logprobs":[]}]},`, `"logprobs":null,`, 1), true},
	{"null content", strings.Replace(okVLLM, `"content":[{"token":"hi","logprob":-0.5,"bytes":[104,105],"top_logprobs":[]},{"token":"<|im_end|>","logprob":-0.1,"bytes":[],"top_logprobs":[]}]`, `"content":null,"refusal":null`, 1), true},
	{"empty ids", strings.Replace(okVLLM, `"prompt_token_ids":[1,2,3]`, `"prompt_token_ids":[]`, 1), true},
	{"null ids", strings.Replace(okVLLM, `"prompt_token_ids":[1,2,3]`, `"prompt_token_ids":null`, 1), true},
	{"negative id", strings.Replace(okVLLM, `"token_ids":[7,2]`, `"token_ids":[-7,2]`, 1), true},
	{"exponent logprob", strings.Replace(okVLLM, `"logprob":-0.5`, `"logprob":-5E-1`, 1), true},
	{"unknown fields", strings.Replace(okVLLM, `"bytes":[104,105]`, `"bytes":[104,105],"x":{"y":[1,true,false,null,"\""]}`, 1), true},
	{"reasoning", strings.Replace(okVLLM, `"content":"hi"}`, `"content":"hi","reasoning":"because"}`, 1), true},
	{"tool calls", strings.Replace(okVLLM, `"content":"hi"}`, `"content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"search","arguments":"{\"q\":1}"}}]}`, 1), true},
	{"rest type error", strings.Replace(okVLLM, `"model":"m"`, `"model":5`, 1), false},
	{"float id", strings.Replace(okVLLM, `"token_ids":[7,2]`, `"token_ids":[7.0,2]`, 1), false},
	{"null id", strings.Replace(okVLLM, `"token_ids":[7,2]`, `"token_ids":[null,2]`, 1), false},
	{"huge id", strings.Replace(okVLLM, `"token_ids":[7,2]`, `"token_ids":[99999999999999999999,2]`, 1), false},
	{"leading zero", strings.Replace(okVLLM, `"token_ids":[7,2]`, `"token_ids":[07,2]`, 1), false},
	{"trailing comma", strings.Replace(okVLLM, `"token_ids":[7,2]`, `"token_ids":[7,2,]`, 1), false},
	{"string logprob", strings.Replace(okVLLM, `"logprob":-0.5`, `"logprob":"-0.5"`, 1), false},
	{"huge logprob", strings.Replace(okVLLM, `"logprob":-0.5`, `"logprob":-1e999`, 1), false},
	{"missing logprob", strings.Replace(okVLLM, `"logprob":-0.5,`, ``, 1), false},
	{"byte 300", strings.Replace(okVLLM, `"bytes":[104,105]`, `"bytes":[300]`, 1), false},
	{"base64 bytes", strings.Replace(okVLLM, `"bytes":[104,105]`, `"bytes":"aGk="`, 1), false},
	{"top logprobs", strings.Replace(okVLLM, `"top_logprobs":[]`, `"top_logprobs":[{"token":"a","logprob":-1}]`, 1), false},
	{"folded key", strings.Replace(okVLLM, `"prompt_token_ids"`, `"Prompt_Token_IDs"`, 1), false},
	{"folded entry key", strings.Replace(okVLLM, `"logprob":-0.5`, `"LogProb":-0.5`, 1), false},
	{"escaped key", strings.Replace(okVLLM, `"prompt_token_ids"`, `"prompt_token_\u0069ds"`, 1), false},
	{"duplicate ids", strings.Replace(okVLLM, `"prompt_token_ids":[1,2,3]`, `"prompt_token_ids":[1],"prompt_token_ids":[1,2,3]`, 1), false},
	{"two choices", strings.Replace(okVLLM, `"token_ids":[7,2]}]`, `"token_ids":[7,2]},{"index":1,"finish_reason":"stop"}]`, 1), false},
	{"no choices", strings.Replace(okVLLM, `"choices":[`, `"x":[`, 1), false},
	{"abort", strings.Replace(okVLLM, `"finish_reason":"stop"`, `"finish_reason":"abort"`, 1), false},
	{"no finish", strings.Replace(okVLLM, `"finish_reason":"stop"`, `"finish_reason":null`, 1), false},
	{"truncated", okVLLM[:len(okVLLM)-40], false},
	{"trailing garbage", okVLLM + "x", false},
	{"html", "<html><body>502</body></html>", false},
	{"sglang short triple", strings.Replace(okSGLang, `[-0.5,7,null]`, `[-0.5]`, 1), false},
	{"sglang float id", strings.Replace(okSGLang, `[-0.5,7,null]`, `[-0.5,7.5,null]`, 1), false},
	{"sglang null entry", strings.Replace(okSGLang, `[-0.5,7,null]`, `null`, 1), false},
	{"sglang two-element triple", strings.Replace(okSGLang, `[-0.5,7,null]`, `[-0.5,7]`, 1), true},
	{"message fields", strings.Replace(okVLLM, `"content":"hi"}`, `"content":"a\nb\u00e9\ud83d\ude00\ud800x\\\"\/","reasoning_content":"r","refusal":null,"name":"n","tool_call_id":"t","annotations":[],"audio":null,"function_call":{"name":"f","arguments":"{}"},"tool_calls":[{"id":"c","index":1,"type":"function","function":{"name":"s","arguments":"{\"q\":[1]}"}},{"type":"function","index":null,"function":null}]}`, 1), true},
	{"invalid utf8 content", strings.Replace(okVLLM, `"content":"hi"`, "\"content\":\"h\xffi\xe2\x82\"", 1), true},
	{"lone low surrogate", strings.Replace(okVLLM, `"content":"hi"`, `"content":"\udc00\ud800\u0041"`, 1), true},
	{"empty tool calls", strings.Replace(okVLLM, `"content":"hi"}`, `"content":null,"tool_calls":[]}`, 1), true},
	{"multi content", strings.Replace(okVLLM, `"content":"hi"`, `"content":[{"type":"text","text":"hi"}]`, 1), true},
	{"folded message key", strings.Replace(okVLLM, `"content":"hi"`, `"Content":"hi"`, 1), true},
	{"MultiContent key", strings.Replace(okVLLM, `"content":"hi"`, `"content":"hi","MultiContent":[]`, 1), true},
	{"null message", strings.Replace(okVLLM, `"message":{"role":"assistant","content":"hi"}`, `"message":null`, 1), true},
	{"numeric role", strings.Replace(okVLLM, `"role":"assistant"`, `"role":1`, 1), false},
	{"duplicate content", strings.Replace(okVLLM, `"content":"hi"`, `"content":"a","content":"hi"`, 1), true},
	{"top fields", strings.Replace(okVLLM, `"model":"m"`, `"model":"m","created":17,"system_fingerprint":null,"service_tier":"auto","metadata":{"weight_version":"w","x":1},"prompt_filter_results":[],"prompt_logprobs":null,"kv_transfer_params":null`, 1), true},
	{"null metadata", strings.Replace(okVLLM, `"model":"m"`, `"model":"m","metadata":null`, 1), true},
	{"usage details", strings.Replace(okVLLM, `"total_tokens":5}`, `"total_tokens":5,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":null,"reasoning_tokens":0}`, 1), true},
	{"null usage", strings.Replace(okVLLM, `"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}`, `"usage":null`, 1), true},
	{"float created", strings.Replace(okVLLM, `"model":"m"`, `"model":"m","created":1.5`, 1), false},
	{"folded top key", strings.Replace(okVLLM, `"model":"m"`, `"Model":"m"`, 1), false},
	{"stop reason", strings.Replace(okVLLM, `"stop_reason":null`, `"stop_reason": [ 1 , "x" ] ,"matched_stop":"</s>","content_filter_results":{}`, 1), true},
	{"reordered entry", strings.Replace(okVLLM, `{"token":"hi","logprob":-0.5,"bytes":[104,105],"top_logprobs":[]}`, `{"bytes":[104,105],"top_logprobs":[],"logprob":-0.5,"token":"hi","x":0}`, 1), true},
	{"spaced entry", strings.Replace(okVLLM, `{"token":"hi","logprob":-0.5,"bytes":[104,105],"top_logprobs":[]}`, `{"token":"hi", "logprob":-0.5,"bytes":[ 104,105],"top_logprobs":null}`, 1), true},
	{"leading zero byte", strings.Replace(okVLLM, `"bytes":[104,105]`, `"bytes":[0,01]`, 1), false},
	{"duplicate logprob", strings.Replace(okVLLM, `"logprob":-0.5`, `"logprob":-0.5,"logprob":-0.5`, 1), false},
	{"spaced ids", strings.Replace(okVLLM, `"prompt_token_ids":[1,2,3]`, `"prompt_token_ids":[ 1 ,22, 333,-4,0,12345678,123456789,5]`, 1), true},
	{"sglang meta fields", strings.Replace(okSGLang, `"id":"x","finish_reason"`, `"id":"y","cached_tokens":4,"e2e_latency":0.5,"finish_reason"`, 1), true},
	{"sglang null meta", strings.Replace(okSGLang, `"meta_info":{"id":"x","finish_reason":{"type":"stop","matched":2},"prompt_tokens":3,"completion_tokens":2,"weight_version":"v1","output_token_logprobs":[[-0.5,7,null],[-0.1,2,"<|im_end|>"]]}`, `"meta_info":null`, 1), true},
}

func TestFastChatAgrees(t *testing.T) {
	for _, tc := range fastCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkFastChat(t, []byte(tc.body)); got != tc.accept {
				t.Errorf("fast path taken %v, want %v", got, tc.accept)
			}
			// decodeChat's errors are DecodeChatResponse's.
			_, _, want := DecodeChatResponse([]byte(tc.body))
			_, got := decodeChat([]byte(tc.body), true, nil)
			if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
				t.Errorf("decodeChat error %v, DecodeChatResponse %v", got, want)
			}
		})
	}
}

// fastCaseFallbacks is what the fast path leaves to encoding/json for the
// fastCases that are not taken whole (a FallbackX) or whose message or
// another member goes to encoding/json; the other cases leave nothing.
var fastCaseFallbacks = map[string]fallbacks{
	"rest type error":     {body: FallbackShape},
	"float id":            {body: FallbackShape},
	"null id":             {body: FallbackShape},
	"huge id":             {body: FallbackShape},
	"leading zero":        {body: FallbackSyntax},
	"trailing comma":      {body: FallbackSyntax},
	"string logprob":      {body: FallbackShape},
	"huge logprob":        {body: FallbackShape},
	"missing logprob":     {body: FallbackShape},
	"byte 300":            {body: FallbackShape},
	"base64 bytes":        {body: FallbackShape},
	"top logprobs":        {body: FallbackTopLogprobs},
	"folded key":          {body: FallbackFoldedKey},
	"folded entry key":    {body: FallbackFoldedKey},
	"escaped key":         {body: FallbackEscapedKey},
	"duplicate ids":       {body: FallbackDuplicateKey},
	"two choices":         {body: FallbackNGt1},
	"no choices":          {body: FallbackNoChoice},
	"abort":               {body: FallbackFinishReason},
	"no finish":           {body: FallbackFinishReason},
	"truncated":           {body: FallbackSyntax},
	"trailing garbage":    {body: FallbackSyntax},
	"html":                {body: FallbackSyntax},
	"sglang short triple": {body: FallbackShape},
	"sglang float id":     {body: FallbackShape},
	"sglang null entry":   {body: FallbackShape},
	"multi content":       {message: true},
	"folded message key":  {message: true},
	"MultiContent key":    {message: true},
	"null message":        {message: true},
	"numeric role":        {body: FallbackShape},
	"duplicate content":   {message: true},
	"top fields":          {member: true},
	"float created":       {body: FallbackShape},
	"folded top key":      {body: FallbackFoldedKey},
	"stop reason":         {member: true},
	"leading zero byte":   {body: FallbackSyntax},
	"duplicate logprob":   {body: FallbackDuplicateKey},
}

// TestFastChatFallbackReasons checks why the fast path leaves each of
// fastCases, or a member of it, to encoding/json, and that decodeChat
// counts exactly that.
func TestFastChatFallbackReasons(t *testing.T) {
	for _, tc := range fastCases {
		t.Run(tc.name, func(t *testing.T) {
			want := fastCaseFallbacks[tc.name]
			for _, wantTokens := range []bool{false, true} {
				if _, got := fastChat([]byte(tc.body), wantTokens, nil); got != want {
					t.Errorf("wantTokens %v: fallbacks %+v, want %+v", wantTokens, got, want)
				}
			}
			m := NewMetrics()
			_, _ = decodeChat([]byte(tc.body), false, m)
			for _, reason := range fallbackReasons {
				wantN := 0.0
				if reason == want.body || reason == FallbackMessage && want.message || reason == FallbackMember && want.member {
					wantN = 1
				}
				if got := testutil.ToFloat64(m.decodeFallbacks.WithLabelValues(reason)); got != wantN {
					t.Errorf("mgrpo_llm_decode_fallback_total{reason=%q} = %v, want %v", reason, got, wantN)
				}
			}
		})
	}
	for name := range fastCaseFallbacks {
		if !slices.ContainsFunc(fastCases, func(c fastCase) bool { return c.name == name }) {
			t.Errorf("fastCaseFallbacks names %q, which is not a fast case", name)
		}
	}
}

func TestFastGenerateAgrees(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		accept     bool
	}{
		{"ok", okGenerate, true},
		{"null meta", `{"text":"hi","output_ids":[7,2],"meta_info":null}`, true},
		{"string id", strings.Replace(okGenerate, `[7,2]`, `["7",2]`, 1), false},
		{"bad triple", strings.Replace(okGenerate, `[-0.5,7,null]`, `[null,7,null]`, 1), false},
		{"truncated", okGenerate[:40], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkFastGenerate(t, []byte(tc.body)); got != tc.accept {
				t.Errorf("fast path taken %v, want %v", got, tc.accept)
			}
		})
	}
}

func TestDecodeChatErrorsTyped(t *testing.T) {
	for _, body := range []string{okVLLM[:60], "<html></html>", `{"choices":[]}`, strings.Replace(okVLLM, `"finish_reason":"stop"`, `"finish_reason":"abort"`, 1)} {
		_, err := decodeChat([]byte(body), false, nil)
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("decodeChat(%.40q) error %v, want a *DecodeError", body, err)
		}
	}
}

// FuzzFastChat feeds random and garbled bodies to the fast chat decoder and
// checks it never disagrees with encoding/json: it either gives up or
// returns exactly what DecodeChatResponse returns.
func FuzzFastChat(f *testing.F) {
	for _, tc := range fastCases {
		f.Add([]byte(tc.body))
	}
	f.Add(cannedVLLM(64))
	f.Add(cannedSGLang(64))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkFastChat(t, body)
	})
}

// FuzzFastGenerate is FuzzFastChat for SGLang's /generate answers.
func FuzzFastGenerate(f *testing.F) {
	for _, s := range []string{okGenerate, okGenerate[:50], `{"text":"","output_ids":[],"meta_info":{}}`, `{"meta_info":{"output_token_logprobs":[[1e5,-0,{"a":[]}]]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkFastGenerate(t, body)
	})
}

// BenchmarkDecode compares the dialects' decoder with encoding/json on the
// 8 KB-history answers.
func BenchmarkDecode(b *testing.B) {
	for _, tc := range []struct {
		name string
		body []byte
	}{{"vllm", cannedVLLM(8 << 10)}, {"sglang", cannedSGLang(8 << 10)}} {
		b.Run(tc.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.body)))
			for b.Loop() {
				if _, fb := fastChat(tc.body, false, nil); fb.body != "" {
					b.Fatal("fast path refused the body")
				}
			}
		})
		b.Run(tc.name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.body)))
			for b.Loop() {
				if _, _, err := DecodeChatResponse(tc.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestFastMessageTaken checks that the message decoder itself takes the
// usual shapes and refuses the rest, which the agreement tests cannot tell
// from a fallback to encoding/json.
func TestFastMessageTaken(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		take      bool
	}{
		{"vllm", `{"role":"assistant","content":"a\nb","refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[],"reasoning":"r","reasoning_content":null}`, true},
		{"tool call", `{"role":"assistant","content":null,"tool_calls":[{"id":"c","index":0,"type":"function","function":{"name":"s","arguments":"{\"q\":1}"}}]}`, true},
		{"multi content", `{"role":"user","content":[]}`, false},
		{"folded", `{"ROLE":"user"}`, false},
		{"number", `{"role":"user","name":1}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want ChatMessage
			err := json.Unmarshal([]byte(tc.msg), &want)
			var got ChatMessage
			s := jscan{Scanner: jsonfast.Scanner{B: []byte(tc.msg)}}
			ok := s.message(&got) && s.End()
			if ok != tc.take {
				t.Fatalf("message taken %v, want %v", ok, tc.take)
			}
			if ok && (err != nil || !reflect.DeepEqual(got, want)) {
				t.Fatalf("message %+v, encoding/json %+v (%v)", got, want, err)
			}
		})
	}
}
