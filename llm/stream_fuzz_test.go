package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// streamFixtures are the vLLM answers of testdata/servers the client's
// requests can get (one choice, no top logprobs), which chunked back into
// a stream must assemble to the same Turn.
var streamFixtures = []string{
	"vllm_basic.json", "vllm_0.10.2_reasoning.json", "vllm_reasoning.json", "vllm_stop_reason_int.json",
	"vllm_stop_reason_str.json", "vllm_length.json", "vllm_tool_calls.json", "vllm_unicode.json",
	"vllm_unicode_ascii_escaped.json", "vllm_prompt_tokens_details.json",
}

// cuts turns fuzz bytes into the places a stream is split at.
type cuts struct{ b []byte }

// next returns a number below n (0 when the bytes are used up).
func (c *cuts) next(n int) int {
	if len(c.b) == 0 || n <= 0 {
		return 0
	}
	v := int(c.b[0])
	c.b = c.b[1:]
	return v % n
}

// split cuts s into k pieces at rune boundaries, some possibly empty.
func (c *cuts) split(s string, k int) []string {
	out := make([]string, k)
	for i := range k - 1 {
		at := c.next(len(s) + 1)
		for at > 0 && at < len(s) && !utf8.RuneStart(s[at]) {
			at--
		}
		out[i], s = s[:at], s[at:]
	}
	out[k-1] = s
	return out
}

// chunkVLLM writes the stream vLLM would send for the unstreamed answer
// body, cut into pieces where c says: a role chunk with the prompt ids,
// then k chunks sharing the content, reasoning, tool-call arguments, token
// ids and logprob entries, the finish on the last, a usage chunk and
// [DONE]; with CRLF line ends and keep-alive comments where c says.
func chunkVLLM(t testing.TB, body []byte, c *cuts) []byte {
	t.Helper()
	var resp struct {
		PromptTokenIDs []int32         `json:"prompt_token_ids"`
		Usage          json.RawMessage `json:"usage"`
		Choices        []struct {
			Message struct {
				Content          *string `json:"content"`
				Reasoning        *string `json:"reasoning"`
				ReasoningContent *string `json:"reasoning_content"`
				ToolCalls        []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			Logprobs *struct {
				Content []json.RawMessage `json:"content"`
			} `json:"logprobs"`
			FinishReason string          `json:"finish_reason"`
			StopReason   json.RawMessage `json:"stop_reason"`
			TokenIDs     []int32         `json:"token_ids"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	m := ch.Message
	k := 1 + c.next(8)
	str := func(p *string) []string {
		if p == nil {
			return make([]string, k)
		}
		return c.split(*p, k)
	}
	content, reasoning, reasoning2 := str(m.Content), str(m.Reasoning), str(m.ReasoningContent)
	var lps []json.RawMessage
	if ch.Logprobs != nil {
		lps = ch.Logprobs.Content
	}
	// Token i goes to piece at[i], in order.
	at := make([]int, len(ch.TokenIDs))
	for i := range at {
		if i > 0 {
			at[i] = at[i-1]
		}
		if at[i] < k-1 && c.next(3) == 0 {
			at[i]++
		}
	}
	args := make([][]string, len(m.ToolCalls))
	for j, tc := range m.ToolCalls {
		args[j] = c.split(tc.Function.Arguments, k)
	}
	var out strings.Builder
	nl := "\n"
	if c.next(2) == 1 {
		nl = "\r\n"
	}
	event := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if c.next(4) == 0 {
			out.WriteString(": keep-alive" + nl + nl)
		}
		fmt.Fprintf(&out, "data: %s%s%s", b, nl, nl)
	}
	event(map[string]any{"object": "chat.completion.chunk", "prompt_token_ids": resp.PromptTokenIDs,
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "logprobs": nil, "finish_reason": nil}}})
	for p := range k {
		delta := map[string]any{}
		if content[p] != "" {
			delta["content"] = content[p]
		}
		if reasoning[p] != "" {
			delta["reasoning"] = reasoning[p]
		}
		if reasoning2[p] != "" {
			delta["reasoning_content"] = reasoning2[p]
		}
		var calls []any
		for j, tc := range m.ToolCalls {
			d := map[string]any{"index": j, "function": map[string]any{"arguments": args[j][p]}}
			if p == 0 {
				d = map[string]any{"index": j, "id": tc.ID, "type": tc.Type, "function": map[string]any{"name": tc.Function.Name, "arguments": args[j][p]}}
			}
			calls = append(calls, d)
		}
		if calls != nil {
			delta["tool_calls"] = calls
		}
		ids, entries := []int32{}, []json.RawMessage{}
		for i, id := range ch.TokenIDs {
			if at[i] == p {
				ids = append(ids, id)
				if i < len(lps) {
					entries = append(entries, lps[i])
				}
			}
		}
		choice := map[string]any{"index": 0, "delta": delta, "token_ids": ids, "logprobs": map[string]any{"content": entries}, "finish_reason": nil}
		if p == k-1 {
			choice["finish_reason"], choice["stop_reason"] = ch.FinishReason, ch.StopReason
		}
		event(map[string]any{"object": "chat.completion.chunk", "choices": []any{choice}})
	}
	event(map[string]any{"object": "chat.completion.chunk", "choices": []any{}, "usage": resp.Usage})
	out.WriteString("data: [DONE]" + nl + nl)
	return []byte(out.String())
}

// resultTurn is the Turn the vLLM dialect makes of a decode's result.
func resultTurn(r *chatResult) Turn {
	t := baseTurn(r.resp, r.ch, nil)
	t.PromptIDs, t.CompletionIDs, t.Logprobs = r.resp.PromptTokenIDs, r.ch.TokenIDs, r.logprobs
	return *t
}

// FuzzStreamAssembly chunks valid vLLM answers into streams in fuzzed
// ways and checks that the assembled Turn is the unstreamed decode's.
func FuzzStreamAssembly(f *testing.F) {
	for i := range streamFixtures {
		f.Add(uint8(i), []byte{})
		f.Add(uint8(i), []byte{7, 1, 200, 3, 0, 0, 9, 250, 17, 2, 2, 5})
	}
	bodies := make([][]byte, len(streamFixtures))
	for i, name := range streamFixtures {
		bodies[i] = mustFixture(f, name)
	}
	f.Fuzz(func(t *testing.T, which uint8, split []byte) {
		body := bodies[int(which)%len(bodies)]
		want, err := decodeChat(body, false, nil)
		if err != nil {
			t.Fatalf("fixture: %v", err)
		}
		stream := chunkVLLM(t, body, &cuts{split})
		got, err := decodeVLLMStream(stream, false, nil)
		if err != nil {
			t.Fatalf("stream of a valid answer: %v\n%s", err, stream)
		}
		if d := cmp.Diff(resultTurn(want), resultTurn(got), cmpopts.IgnoreUnexported(Turn{}), cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("assembled turn differs (-unstreamed +streamed):\n%s\nstream:\n%s", d, stream)
		}
		// Cut anywhere before [DONE], the stream is a partial one.
		end := len(stream) - len("data: [DONE]\n\n") - 1
		cut := stream[:(&cuts{split}).next(end)]
		if r, err := decodeVLLMStream(cut, false, nil); err == nil {
			t.Fatalf("a stream cut at %d decoded without error", len(cut))
		} else if !errors.Is(err, ErrStreamEnded) {
			t.Fatalf("a stream cut at %d: %v, want ErrStreamEnded", len(cut), err)
		} else if r != nil && len(r.ch.TokenIDs) > len(want.ch.TokenIDs) {
			t.Fatalf("a cut stream has more tokens than the whole")
		}
	})
}

// FuzzStreamDecoders feeds arbitrary bytes to both stream decoders: they
// return a result or a *DecodeError, and never panic.
func FuzzStreamDecoders(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\",\"token_ids\":[1]}],\"prompt_token_ids\":[2]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"text\":\"hi\",\"output_ids\":[7],\"meta_info\":{\"completion_tokens\":1,\"finish_reason\":{\"type\":\"stop\"},\"output_token_logprobs\":[[-0.5,7,null]]}}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"boom\"}}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3}]}}]}\n\n"))
	f.Add([]byte(": hi\r\ndata: [DO\r\n\r\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		var de *DecodeError
		if r, err := decodeVLLMStream(body, true, nil); err != nil && !errors.As(err, &de) {
			t.Fatalf("vllm stream: untyped error %v", err)
		} else if err == nil && (r == nil || r.ch.FinishReason == "") {
			t.Fatalf("vllm stream accepted without a finish reason")
		}
		if _, err := decodeGenerateStream(body, nil); err != nil && !errors.As(err, &de) {
			t.Fatalf("generate stream: untyped error %v", err)
		}
	})
}
