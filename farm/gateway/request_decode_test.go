package gateway

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mgrpo/mgrpo/llm"
)

// agentRequest is a chat request as the OpenAI SDKs send one: a history
// with a tool call and its result, tools, sampling fields and members the
// gateway does not read.
const agentRequest = `{"model":"planner","messages":[{"role":"system","content":"You plan."},` +
	`{"role":"user","content":[{"type":"text","text":"Who wrote \"X\"?\n"}]},` +
	`{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"q\":\"é\"}"}}]},` +
	`{"role":"tool","tool_call_id":"call_1","content":"result ✓"},` +
	`{"role":"assistant","content":"…","reasoning_content":"think","name":"p"}],` +
	`"tools":[{"type":"function","function":{"name":"search","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]},"strict":false}}],` +
	`"tool_choice":"auto","parallel_tool_calls":true,"temperature":0.7,"top_p":1,"max_tokens":512,"max_completion_tokens":null,"n":1,"seed":-9223372036854775808,` +
	`"stop":["</answer>"],"stream":true,"stream_options":{"include_usage":true},"user":"u","metadata":{"k":"v"}}`

var requestCases = []struct {
	name, body, reason string
}{
	{"agent", agentRequest, ""},
	{"minimal", `{"messages":[{"role":"user","content":"hi"}]}`, ""},
	{"spaced", "{ \"model\" : \"m\" ,\n \"messages\" : [ { \"role\" : \"user\" , \"content\" : \"hi\" } ] , \"stop\" : \"x\" }", ""},
	{"nulls", `{"model":null,"messages":null,"tools":null,"stream":null,"stream_options":null,"temperature":null,"top_p":null,"max_tokens":null,"n":null,"seed":null,"stop":null}`, ""},
	{"empty", `{"messages":[],"tools":[]}`, ""},
	{"tool call index", `{"messages":[{"role":"assistant","tool_calls":[{"index":0,"id":"c","type":"function","function":null}]}]}`, ""},
	{"escaped text", `{"messages":[{"role":"user","content":"a\u00e9\ud83d\ude00\\"}]}`, ""},

	{"folded key", strings.Replace(agentRequest, `"messages"`, `"Messages"`, 1), llm.FallbackFoldedKey},
	{"folded message key", strings.Replace(agentRequest, `"tool_call_id"`, `"Tool_Call_ID"`, 1), llm.FallbackFoldedKey},
	{"escaped key", strings.Replace(agentRequest, `"model"`, `"mod\u0065l"`, 1), llm.FallbackEscapedKey},
	{"duplicate", strings.Replace(agentRequest, `"model":"planner"`, `"model":"planner","model":"x"`, 1), llm.FallbackDuplicateKey},
	{"null message", `{"messages":[null]}`, llm.FallbackShape},
	{"float max tokens", strings.Replace(agentRequest, `"max_tokens":512`, `"max_tokens":512.0`, 1), llm.FallbackShape},
	{"string temperature", strings.Replace(agentRequest, `"temperature":0.7`, `"temperature":"0.7"`, 1), llm.FallbackShape},
	{"bad tools", strings.Replace(agentRequest, `"tools":[{`, `"tools":[1,{`, 1), llm.FallbackShape},
	{"truncated", agentRequest[:200], llm.FallbackSyntax},
	{"trailing garbage", agentRequest + "}", llm.FallbackSyntax},
	{"not an object", `[]`, llm.FallbackShape},
}

// checkFastChatRequest fails unless fastChatRequest gave up on body or
// decoded exactly what encoding/json decodes; it returns the reason.
func checkFastChatRequest(t *testing.T, body []byte) string {
	t.Helper()
	var got, want chatRequest
	why := fastChatRequest(body, &got, nil)
	got.toolsRaw = nil
	err := json.Unmarshal(body, &want)
	switch {
	case why == "":
	case why == llm.FallbackSyntax && json.Valid(body):
		t.Fatalf("syntax fallback for valid JSON %q", body)
	case why == llm.FallbackShape && !json.Valid(body):
		t.Fatalf("shape fallback for invalid JSON %q", body)
	default:
		return why
	}
	if err != nil {
		t.Fatalf("fast path accepted a request encoding/json rejects (%v): %q", err, body)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fast path decoded %q differently:\nfast          %#v\nencoding/json %#v", body, got, want)
	}
	return ""
}

func TestFastChatRequest(t *testing.T) {
	for _, tc := range requestCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkFastChatRequest(t, []byte(tc.body)); got != tc.reason {
				t.Errorf("fallback %q, want %q", got, tc.reason)
			}
		})
	}
}

// TestRequestFallbacksCounted checks that a request the fast decoder gives
// up on is counted once by its reason, and decoded by encoding/json.
func TestRequestFallbacksCounted(t *testing.T) {
	m := NewMetrics()
	for _, body := range []string{agentRequest, strings.Replace(agentRequest, `"messages"`, `"Messages"`, 1), agentRequest[:50]} {
		var req chatRequest
		err := decodeChatRequest([]byte(body), &req, nil, m)
		var want chatRequest
		wantErr := json.Unmarshal([]byte(body), &want)
		want.Tools = canonicalTools(want.Tools)
		req.toolsRaw = nil
		if (err == nil) != (wantErr == nil) || err == nil && !reflect.DeepEqual(req, want) {
			t.Errorf("decodeChatRequest(%.30q): %v, encoding/json %v", body, err, wantErr)
		}
	}
	for _, reason := range requestFallbackReasons {
		want := 0.0
		if reason == llm.FallbackFoldedKey || reason == llm.FallbackSyntax {
			want = 1
		}
		if got := testutil.ToFloat64(m.decodeFallbacks.WithLabelValues(reason)); got != want {
			t.Errorf("mgrpo_gateway_request_decode_fallback_total{reason=%q} = %v, want %v", reason, got, want)
		}
	}
}

// FuzzFastChatRequest checks that the fast request decoder never disagrees
// with encoding/json: it gives up, or decodes exactly what encoding/json
// decodes.
func FuzzFastChatRequest(f *testing.F) {
	for _, tc := range requestCases {
		f.Add([]byte(tc.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkFastChatRequest(t, body)
	})
}
