package llm

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReasoningFieldModes checks the vLLM dialect's two names for a
// message's reasoning: current vLLM's reasoning by default, older vLLM's
// reasoning_content (and no reasoning text in reasoning) with
// Config.ReasoningContent, streamed and not.
func TestReasoningFieldModes(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		cfg := testConfig(DialectVLLM)
		cfg.ReasoningContent = legacy
		_, ts := MustServer(t, cfg)
		_, _, b := post(t, ts.URL+"/v1/chat/completions", chatBody(map[string]any{"seed": 1}))
		var r struct {
			Choices []struct {
				Message map[string]json.RawMessage `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(b, &r); err != nil || len(r.Choices) == 0 {
			t.Fatalf("legacy %v: %v: %s", legacy, err, b)
		}
		m := r.Choices[0].Message
		reasoning, content := string(m["reasoning"]), string(m["reasoning_content"])
		if legacy {
			if reasoning != "null" || len(content) < 3 {
				t.Errorf("legacy: reasoning %s, reasoning_content %s; want null and the text", reasoning, content)
			}
		} else {
			if _, ok := m["reasoning_content"]; ok || len(reasoning) < 3 {
				t.Errorf("current: reasoning %s, reasoning_content %s; want the text and no reasoning_content", reasoning, content)
			}
		}
		_, _, sb := post(t, ts.URL+"/v1/chat/completions", chatBody(map[string]any{"seed": 1, "stream": true}))
		gotNew, gotOld := strings.Contains(string(sb), `"reasoning":"`), strings.Contains(string(sb), `"reasoning_content":"`)
		if gotNew == legacy || gotOld != legacy {
			t.Errorf("legacy %v stream: reasoning %v, reasoning_content %v", legacy, gotNew, gotOld)
		}
	}
}

// TestSGLangTokenizeIgnoresAddGenerationPrompt checks that /v1/tokenize
// serves SGLang's behaviour: add_generation_prompt is not a field of
// SGLang's TokenizeRequest and the messages are rendered as a chat
// request, generation prompt included; vLLM's /tokenize honours it.
func TestSGLangTokenizeIgnoresAddGenerationPrompt(t *testing.T) {
	s, ts := MustServer(t, testConfig(DialectSGLang))
	for _, tc := range []struct {
		path string
		want bool
	}{{"/v1/tokenize", true}, {"/tokenize", false}} {
		_, _, b := post(t, ts.URL+tc.path, map[string]any{"messages": userMsg("hi"), "add_generation_prompt": false})
		var r struct {
			Tokens []int `json:"tokens"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v: %s", tc.path, err, b)
		}
		text, err := s.Tokenizer().Decode(r.Tokens)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.HasSuffix(text, IMStart+"assistant\n"); got != tc.want {
			t.Errorf("%s with add_generation_prompt false: ends with the assistant header %v, want %v (%q)", tc.path, got, tc.want, text)
		}
	}
}
