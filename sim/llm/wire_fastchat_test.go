package llm

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// decodeChatSlow is decodeBytes's encoding/json path for a chat request.
// The fast path's results are compared with it.
func decodeChatSlow(body []byte, strict bool) (chatRequest, error) {
	var req chatRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&req); err != nil {
		return req, err
	}
	if dec.More() {
		return req, errExtraData
	}
	return req, nil
}

var errExtraData = &apiError{message: "extra data"}

// checkChatFast fails when decodeChatFast accepts body but encoding/json
// rejects it (strict or not) or decodes something else. It reports whether
// the fast path accepted body.
func checkChatFast(t *testing.T, body []byte) bool {
	t.Helper()
	var fast chatRequest
	if !decodeChatFast(body, &fast) {
		if !reflect.ValueOf(fast).IsZero() {
			t.Fatalf("fast path refused %q but changed the request", body)
		}
		return false
	}
	for _, strict := range []bool{false, true} {
		slow, err := decodeChatSlow(body, strict)
		if err != nil {
			t.Fatalf("fast path accepted what encoding/json rejects (strict %v: %v): %q", strict, err, body)
		}
		// A string content is decoded in text instead of kept in Content.
		fast := fast
		fast.Messages = slices.Clone(fast.Messages)
		for i, m := range fast.Messages {
			if m.text == nil || i >= len(slow.Messages) {
				continue
			}
			want, err := messageText(slow.Messages[i].Content, i)
			if err != nil || *m.text != want || m.Content != nil {
				t.Fatalf("message %d: fast text %q (content %q), messageText %q (%v)", i, *m.text, m.Content, want, err)
			}
			fast.Messages[i].text, fast.Messages[i].Content = nil, slow.Messages[i].Content
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast path and encoding/json disagree on %q:\nfast %#v\njson %#v", body, fast, slow)
		}
	}
	return true
}

// farmChatBody is a request shaped like the rollout farm's: go-openai's
// field order, HTML-escaped content, tool calls and tool results, and a
// seed of 19 digits (derived seeds span the int64 range).
const farmChatBody = `{"model":"sim-qwen3","messages":[{"role":"system","content":"You are a research executor. Use the tools \u003csearch\u003e \u0026 visit."},` +
	`{"role":"user","content":"Find the capital of Samaria."},` +
	`{"role":"assistant","reasoning_content":"I need the capital. I will search.","tool_calls":[{"id":"chatcmpl-tool-1e51","type":"function","function":{"name":"search","arguments":"{\"query\":[\"Samaria capital\"]}"}}]},` +
	`{"role":"tool","content":"Search results for \"Samaria capital\" (10):\n\n1. [Samaria | Gazetteer](http://127.0.0.1:45953/site/samaria.html)\n   ... Capital: Yorelhalhaven — café ☕ 😀\t\\ ...\n","name":"search","tool_call_id":"chatcmpl-tool-1e51"}],` +
	`"max_tokens":2048,"stream":false,"logprobs":true,"tools":[{"function":{"name":"search","description":"Search the web.","parameters":{"additionalProperties":false,"properties":{"query":{"items":{"minLength":1,"type":"string"},"maxItems":5,"type":"array"}},"required":["query"],"type":"object"}},"type":"function"}],` +
	`"temperature":1,"top_logprobs":0,"seed":8874413861467889741,"return_token_ids":true}`

// chatFastSeeds are bodies around the fast path's edges.
var chatFastSeeds = []string{
	farmChatBody,
	`{}`, ` {} `, `null`, `[]`, `{"model":"m"}{}`, `{"model":"m"}}`, `{"model":"m"} x`,
	`{"messages":[]}`, `{"messages":null}`, `{"messages":[null]}`, `{"messages":[{}]}`,
	`{"messages":[{"role":"user","content":null}]}`,
	`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`,
	`{"messages":[{"role":"user","content":"a\ud83d\ude00b\u00e9\/"}]}`,
	`{"messages":[{"role":"user","content":"\ud83d"}]}`, `{"messages":[{"role":"user","content":"\ud83dx"}]}`,
	`{"messages":[{"role":"user","content":"\udc00\ud800"}]}`, `{"messages":[{"role":"user","content":"\xff"}]}`,
	`{"messages":[{"role":"user","content":"a` + "\x01" + `"}]}`, `{"messages":[{"Role":"user"}]}`,
	`{"messages":[{"role":"user","role":"tool"}]}`, `{"model":"a","model":"b"}`, `{"Model":"a"}`, `{"modeL":"a"}`,
	`{"unknown":1}`, `{"stream_options":{"include_usage":true}}`,
	`{"n":1.0}`, `{"n":1e2}`, `{"n":-0}`, `{"n":01}`, `{"n":9223372036854775808}`, `{"n":"1"}`, `{"n":null}`, `{"n":true}`,
	`{"seed":-9223372036854775808}`, `{"temperature":1e400}`, `{"temperature":-0.0}`, `{"temperature":0.5E-3}`, `{"temperature":.5}`,
	`{"stop":"x"}`, `{"stop":["a","b"]}`, `{"stop":[]}`, `{"stop":null}`, `{"stop":[null]}`, `{"stop":1}`,
	`{"tool_choice":"auto"}`, `{"tool_choice":null}`, `{"tool_choice": {"type" : "function"} }`,
	`{"chat_template_kwargs":{"enable_thinking":false}}`, `{"chat_template_kwargs":null}`, `{"chat_template_kwargs":[1]}`,
	`{"stream":null,"logprobs":false,"add_generation_prompt":null,"skip_special_tokens":true}`,
	`{"tools":[{"type":"function","function":{"name":"f","parameters":null,"strict":null}}]}`,
	`{"tools":[{"type":"function","function":null}]}`,
	`{"messages":[{"role":"assistant","tool_calls":[{"id":"1","index":0,"function":{"name":"f","arguments":{"a":[1,2.5e3,"\u0041",true,null]}}}]}]}`,
	"{\"model\"\t:\r\n\"m\" ,\"n\" : 2 }\n",
	`{"model":"m",}`, `{"model":"m"}]`, `{,}`, `{"stop":["a",]}`, `{"messages":[{"role":"user"},]}`, `{"model":"m" "n":1}`,
	`{"n":-}`, `{"n":1.}`, `{"n":1e}`, `{"n":-01}`, `{"n":2e+3}`, `{"temperature":1E-400}`, `{"seed":"1"}`, `{"stream":tru}`, `{"stream":truex}`,
	`{"tool_choice":{"a":[[[[{}]]]],"\u0062":"\ud83d\ude00","c":-0.5e-7}}`, `{"tool_choice":[1,2,]}`, `{"tool_choice":{"a" 1}}`,
	`{"tool_choice":"` + "\xff" + `"}`, `{"messages":[{"role":"user","content":"\u00"}]}`, `{"messages":[{"role":"user","content":"\q"}]}`,
	`{"messages":[{"role":"user","content":"\ud83d\u0041\uDE00\uD83D\uDE00"}]}`, `{"model":"\u006d"}`, `{"mod\u0065l":"m"}`, `{"modèle":"m"}`,
	`{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{}"},"id":"x","type":"function","index":null}]}]}`,
}

func TestDecodeChatFastAgrees(t *testing.T) {
	for _, body := range chatFastSeeds {
		checkChatFast(t, []byte(body))
	}
	if !checkChatFast(t, []byte(farmChatBody)) {
		t.Fatal("fast path refused the farm's request shape")
	}
}

// FuzzDecodeChatFast compares decodeChatFast with encoding/json on any
// input.
func FuzzDecodeChatFast(f *testing.F) {
	for _, body := range chatFastSeeds {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkChatFast(t, body)
	})
}

// FuzzReaderText checks reqReader.text against json.Unmarshal for s as the
// inside of a string literal: what the reader takes decodes the same, and it
// takes nothing json.Unmarshal rejects.
func FuzzReaderText(f *testing.F) {
	for _, s := range []string{"", "plain", `\" \\ \/ \b \f \n \r \t`, `\u00e9 \ud83d\ude00 \ud800 \udc00\u0041 \uD83D\uDE00`,
		"é😀\xff\xe2\x82 \xed\xa0\x80", "ctl \x01", `bad \x`, `\u12`, `\ud83d\u12`, `\ud83d\`, "a\"b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lit := []byte(`"` + s + `"`)
		r := reqReader{b: lit}
		got := r.text()
		var want string
		err := json.Unmarshal(lit, &want)
		if r.bad || r.i != len(lit) {
			return // refused or stopped early: encoding/json decides
		}
		if err != nil {
			t.Fatalf("text took %q, json.Unmarshal: %v", lit, err)
		}
		if got != want {
			t.Fatalf("text(%q) = %q, json.Unmarshal %q", lit, got, want)
		}
	})
}

// TestReaderTakesFarmShape checks that the shapes clients send are read by
// the fast path, not left to encoding/json: a refusal there is no error,
// only lost speed, which no other test would notice.
func TestReaderTakesFarmShape(t *testing.T) {
	for _, body := range []string{
		farmChatBody,
		`{"messages":[{"role":"user","content":"` + strings.Repeat(`line \"quoted\" \u003ctag\u003e é\n`, 50) + `"}],"seed":-1,"n":2,"temperature":0.7,"top_p":1e-2,"stop":["\n\n"]}`,
	} {
		if !checkChatFast(t, []byte(body)) {
			t.Errorf("fast path refused %.80q…", body)
		}
	}
}
