package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Chunks as vLLM writes them: pydantic's model_dump_json(exclude_unset=True)
// of ChatCompletionStreamResponse (compact, UTF-8 text unescaped), the
// final usage chunk with exclude_none too (vllm-project/vllm,
// vllm/entrypoints/openai/serving_chat.py, protocol.py).
const (
	vllmRoleChunk   = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"prompt_token_ids":[151644,8948,198]}`
	vllmTokenChunk  = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764000000,"model":"m","choices":[{"index":0,"delta":{"content":" hé"},"logprobs":{"content":[{"token":" hé","logprob":-0.0312,"bytes":[32,104,195,169],"top_logprobs":[]}]},"finish_reason":null,"token_ids":[305]}]}`
	vllmFinishChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764000000,"model":"m","choices":[{"index":0,"delta":{"content":""},"logprobs":{"content":[{"token":"<|im_end|>","logprob":-9999.0,"bytes":[60,124],"top_logprobs":[]}]},"finish_reason":"stop","stop_reason":151645,"token_ids":[151645]}]}`
	vllmUsageChunk  = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764000000,"model":"m","choices":[],"usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}}`
	genEvent        = `{"text":"hi","output_ids":[7,2],"meta_info":{"id":"x","finish_reason":null,"prompt_tokens":3,"weight_version":"default","total_retractions":0,"input_token_logprobs":[[null,1,null]],"output_token_logprobs":[[-0.5,7,"hi"],[-0.1,2,null]],"completion_tokens":2,"cached_tokens":0,"e2e_latency":0.01}}`
)

// streamChunkCases are events the fast chunk decoder must take whole
// (take) or leave to encoding/json for the reason named.
var streamChunkCases = []struct {
	name, data string
	reason     string // "" when taken whole
}{
	{"role", vllmRoleChunk, ""},
	{"token", vllmTokenChunk, ""},
	{"finish int stop", vllmFinishChunk, ""},
	{"finish str stop", strings.Replace(vllmFinishChunk, `151645,"token_ids"`, `"</s>","token_ids"`, 1), ""},
	{"finish null stop", strings.Replace(vllmFinishChunk, `"stop_reason":151645`, `"stop_reason":null`, 1), ""},
	{"usage", vllmUsageChunk, ""},
	{"continuous usage", strings.Replace(vllmTokenChunk, `"model":"m",`, `"model":"m","usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4},`, 1), ""},
	{"reasoning", strings.Replace(vllmTokenChunk, `"delta":{"content":" hé"}`, `"delta":{"reasoning":"hm","reasoning_content":"hm"}`, 1), ""},
	{"tool call start", strings.Replace(vllmTokenChunk, `"delta":{"content":" hé"}`, `"delta":{"tool_calls":[{"id":"chatcmpl-tool-1","type":"function","index":0,"function":{"name":"search","arguments":""}}]}`, 1), ""},
	{"tool call args", strings.Replace(vllmTokenChunk, `"delta":{"content":" hé"}`, `"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\": \"\\u00e9\"}"}}]}`, 1), ""},
	{"no logprobs no ids", `{"choices":[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null,"token_ids":null}]}`, ""},
	{"spaced", "{ \"choices\" : [ { \"index\" : 0 , \"delta\" : { \"content\" : \"a\" } , \"token_ids\" : [ 1 , 2 ] } ] }\n", ""},
	{"escaped text", `{"choices":[{"index":0,"delta":{"content":"a\n\"b\"\ud83d\ude00\ud800"}}]}`, ""},
	{"null members", `{"choices":null,"usage":null,"metadata":null,"prompt_token_ids":null,"error":null,"object":null}`, ""},
	{"metadata", `{"choices":[],"metadata":{"weight_version":"v3"}}`, ""},
	{"error event", `{"error":{"object":"error","message":"boom","type":"BadRequestError","param":null,"code":400}}`, ""},
	{"old error", `{"object":"error","message":"boom","type":"InternalServerError","param":null,"code":500}`, ""},
	{"empty entries", `{"choices":[{"index":0,"delta":{},"logprobs":{"content":[]},"token_ids":[]}]}`, ""},
	{"null entry fields", `{"choices":[{"index":null,"delta":null,"logprobs":{"content":[{"token":null,"logprob":null}]}}]}`, ""},
	{"two choices", `{"choices":[{"index":1,"delta":{"content":"b"}},{"index":0,"delta":{"content":"a"}}]}`, ""},
	{"unknown members", `{"x":[{"y":{}}],"choices":[{"index":0,"z":true,"delta":{"w":1},"logprobs":{"v":[],"content":[{"u":"t","logprob":-1}]}}]}`, ""},

	{"folded key", strings.Replace(vllmTokenChunk, `"choices"`, `"Choices"`, 1), FallbackFoldedKey},
	{"folded delta key", strings.Replace(vllmTokenChunk, `"content":" hé"`, `"Content":" hé"`, 1), FallbackFoldedKey},
	{"folded entry key", strings.Replace(vllmTokenChunk, `"logprob":-0.0312`, `"LogProb":-0.0312`, 1), FallbackFoldedKey},
	{"escaped key", strings.Replace(vllmTokenChunk, `"token_ids"`, `"token\u005fids"`, 1), FallbackEscapedKey},
	{"duplicate content", strings.Replace(vllmTokenChunk, `"content":" hé"`, `"content":" hé","content":"x"`, 1), FallbackDuplicateKey},
	{"null choice", `{"choices":[null]}`, FallbackShape},
	{"null tool call", `{"choices":[{"delta":{"tool_calls":[null]}}]}`, FallbackShape},
	{"float id", strings.Replace(vllmTokenChunk, `[305]`, `[305.0]`, 1), FallbackShape},
	{"string logprob", strings.Replace(vllmTokenChunk, `-0.0312`, `"-0.0312"`, 1), FallbackShape},
	{"number content", strings.Replace(vllmTokenChunk, `"content":" hé"`, `"content":1`, 1), FallbackShape},
	{"completion details", strings.Replace(vllmUsageChunk, `"prompt_tokens_details"`, `"completion_tokens_details":{},"prompt_tokens_details"`, 1), FallbackShape},
	{"not an object", `null`, FallbackShape},
	{"truncated", vllmTokenChunk[:90], FallbackSyntax},
	{"trailing garbage", vllmTokenChunk + "x", FallbackSyntax},
}

// warmChunk is decoded before the event under test, so that its check
// also covers a decoder's reused buffers: two choices with ids, entries and
// texts.
const warmChunk = `{"choices":[{"index":0,"delta":{"content":"ab","reasoning":"c","reasoning_content":"d"},"logprobs":{"content":[{"token":"a","logprob":-1},{"token":"b","logprob":-2}]},"token_ids":[1,2,3,4,5,6,7,8,9]},{"index":1,"delta":{"content":"x"},"logprobs":{"content":[]},"token_ids":[]}]}`

// checkFastVLLMChunk decodes data with the fast chunk decoder (fresh,
// after another event, after data itself; tokens wanted or not) and with
// encoding/json, and fails unless the fast one gave up or decoded exactly
// what encoding/json decodes. It returns the fallbacks.
func checkFastVLLMChunk(t *testing.T, data []byte) fallbacks {
	t.Helper()
	var want vllmChunk
	err := json.Unmarshal(data, &want)
	var first fallbacks
	for i, warm := range []string{"", warmChunk, string(data)} {
		for _, wantTokens := range []bool{false, true} {
			var d chunkDecoder
			if warm != "" {
				var w vllmChunk
				d.fastVLLMChunk([]byte(warm), &w, wantTokens)
			}
			var got vllmChunk
			fb := d.fastVLLMChunk(data, &got, wantTokens)
			checkFallbacks(t, data, fb)
			if i == 0 && !wantTokens {
				first = fb
			} else if fb != first {
				t.Fatalf("fallbacks %+v after %.40q (tokens %v), %+v fresh", fb, warm, wantTokens, first)
			}
			if fb.body != "" {
				continue
			}
			if err != nil {
				t.Fatalf("fast path accepted an event encoding/json rejects (%v): %q", err, data)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("fast path decoded %q differently (after %.40q, tokens %v):\nfast          %#v\nencoding/json %#v", data, warm, wantTokens, got, want)
			}
		}
	}
	return first
}

// checkFastGenerateEvent is checkFastVLLMChunk for SGLang's /generate
// events.
func checkFastGenerateEvent(t *testing.T, data []byte) fallbacks {
	t.Helper()
	var got, want generateEvent
	fb := fastGenerateEvent(data, &got)
	err := json.Unmarshal(data, &want)
	checkFallbacks(t, data, fb)
	if fb.body != "" {
		return fb
	}
	if err != nil {
		t.Fatalf("fast path accepted an event encoding/json rejects (%v): %q", err, data)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fast path decoded %q differently:\nfast          %#v\nencoding/json %#v", data, got, want)
	}
	return fb
}

func TestFastVLLMChunk(t *testing.T) {
	for _, tc := range streamChunkCases {
		t.Run(tc.name, func(t *testing.T) {
			if fb := checkFastVLLMChunk(t, []byte(tc.data)); fb.body != tc.reason || fb.message || fb.member {
				t.Errorf("fallbacks %+v, want reason %q", fb, tc.reason)
			}
		})
	}
}

func TestFastGenerateEvent(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       fallbacks
	}{
		{"event", genEvent, fallbacks{}},
		{"finished", strings.Replace(genEvent, `"finish_reason":null`, `"finish_reason":{"type":"stop","matched":151645}`, 1), fallbacks{}},
		{"no logprobs", `{"text":"","output_ids":[],"meta_info":{"id":"x","finish_reason":null,"prompt_tokens":3,"completion_tokens":0}}`, fallbacks{}},
		{"error event", `{"error":{"message":"boom"}}`, fallbacks{}},
		{"null members", `{"text":null,"output_ids":null,"meta_info":null,"error":null}`, fallbacks{}},
		{"string count", strings.Replace(genEvent, `"completion_tokens":2`, `"completion_tokens":"2"`, 1), fallbacks{body: FallbackShape}},
		{"folded key", strings.Replace(genEvent, `"output_ids"`, `"Output_IDs"`, 1), fallbacks{body: FallbackFoldedKey}},
		{"duplicate text", strings.Replace(genEvent, `"text":"hi"`, `"text":"hi","text":"ho"`, 1), fallbacks{body: FallbackDuplicateKey}},
		{"short triple", strings.Replace(genEvent, `[-0.1,2,null]`, `[-0.1]`, 1), fallbacks{body: FallbackShape}},
		{"truncated", genEvent[:50], fallbacks{body: FallbackSyntax}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if fb := checkFastGenerateEvent(t, []byte(tc.data)); fb != tc.want {
				t.Errorf("fallbacks %+v, want %+v", fb, tc.want)
			}
		})
	}
}

// sseData returns the data of each event of an event stream.
func sseData(tb testing.TB, stream []byte) [][]byte {
	var out [][]byte
	_, _ = sseEvents(stream, func(d []byte) error {
		out = append(out, bytes.Clone(d))
		return nil
	})
	return out
}

// FuzzFastVLLMChunk checks that the fast chunk decoder never disagrees
// with encoding/json: it gives up, or decodes exactly what encoding/json
// decodes. Seeds: the cases above, the benchmark's stream and the
// fixtures' answers chunked as vLLM streams them.
func FuzzFastVLLMChunk(f *testing.F) {
	for _, tc := range streamChunkCases {
		f.Add([]byte(tc.data))
	}
	events := sseData(f, cannedVLLMStream(64))
	for _, e := range events[:3] {
		f.Add(e)
	}
	f.Add(events[len(events)-1])
	for _, name := range streamFixtures {
		for _, e := range sseData(f, chunkVLLM(f, mustFixture(f, name), &cuts{[]byte{3, 1, 7}})) {
			f.Add(e)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastVLLMChunk(t, data)
	})
}

// FuzzFastGenerateEvent is FuzzFastVLLMChunk for SGLang's /generate
// events.
func FuzzFastGenerateEvent(f *testing.F) {
	for _, s := range []string{genEvent, `{"error":"x"}`, `{"text":"\u00e9","output_ids":[1],"meta_info":{"output_token_logprobs":[[-1e-3,1,"\u00e9"]],"completion_tokens":1}}`, genEvent[:70]} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastGenerateEvent(t, data)
	})
}

// TestStreamFallbacksCounted checks that a stream's events the fast
// decoders give up on are counted by reason, once per event, and that a
// sim's streams (both dialects) leave nothing to encoding/json.
func TestStreamFallbacksCounted(t *testing.T) {
	m := NewMetrics()
	stream := []byte("data: " + vllmRoleChunk + "\n\ndata: " + strings.Replace(vllmTokenChunk, `"choices"`, `"Choices"`, 1) +
		"\n\ndata: " + vllmFinishChunk + "\n\ndata: " + vllmUsageChunk + "\n\ndata: [DONE]\n\n")
	if _, err := decodeVLLMStream(stream, false, m); err != nil {
		t.Fatal(err)
	}
	for _, reason := range fallbackReasons {
		want := 0.0
		if reason == FallbackFoldedKey {
			want = 1
		}
		if got := testutil.ToFloat64(m.decodeFallbacks.WithLabelValues(reason)); got != want {
			t.Errorf("mgrpo_llm_decode_fallback_total{reason=%q} = %v, want %v", reason, got, want)
		}
	}

	for _, dialect := range []string{DialectVLLM, DialectSGLang} {
		t.Run(dialect, func(t *testing.T) {
			s := mustSim(t, simConfig(dialect, 5), nil)
			m := NewMetrics()
			c := mustClient(t, Config{Dialect: dialect, Endpoints: []string{s.ts.URL}, CaptureTokens: true, Stream: true, Metrics: m})
			w := mustWorld(t)
			turns, err := runTrajectory(context.Background(), c, w, w.Questions[0].Question, "", 4, 3)
			if err != nil || len(turns) == 0 {
				t.Fatalf("%d turns, %v", len(turns), err)
			}
			for _, reason := range fallbackReasons {
				if got := testutil.ToFloat64(m.decodeFallbacks.WithLabelValues(reason)); got != 0 {
					t.Errorf("mgrpo_llm_decode_fallback_total{reason=%q} = %v on the sim's streams, want 0", reason, got)
				}
			}
		})
	}
}
