package llm

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseHermes(t *testing.T) {
	cases := []struct {
		name      string
		text      string
		calls     []string // name:args
		content   string
		canonical bool
		bad       bool
	}{
		{"none", "just text", nil, "just text", true, false},
		{"one", "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": [\"a\"]}}\n</tool_call>", []string{`search:{"query": ["a"]}`}, "", true, false},
		{"two with head", "Looking.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\":1}}\n</tool_call>", []string{"a:{}", `b:{"x":1}`}, "Looking.", true, false},
		{"string args", `<tool_call>{"name": "a", "arguments": "{\"x\": 2}"}</tool_call>`, []string{`a:{"x": 2}`}, "", false, false},
		{"bad json", "<tool_call>\n{\"name\": \"a\", \"arguments\": {\n</tool_call>", nil, "", false, true},
		{"no name", "<tool_call>\n{\"arguments\": {}}\n</tool_call>", nil, "", false, true},
		{"unclosed", "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}", nil, "", false, true},
		{"array args", "<tool_call>\n{\"name\": \"a\", \"arguments\": [1]}\n</tool_call>", nil, "", false, true},
		{"good then bad", "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\nnope\n</tool_call>", []string{"a:{}"}, "", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ParseHermes(tc.text)
			var fe *FormatError
			if tc.bad != errors.As(err, &fe) {
				t.Fatalf("err %v, want bad=%v", err, tc.bad)
			}
			if tc.bad && (fe.Raw == "" || !strings.Contains(tc.text, fe.Raw)) {
				t.Errorf("format error raw %q not from the text", fe.Raw)
			}
			var got []string
			for _, c := range res.Calls {
				got = append(got, c.Function.Name+":"+c.Function.Arguments)
			}
			if strings.Join(got, "|") != strings.Join(tc.calls, "|") {
				t.Errorf("calls %q, want %q", got, tc.calls)
			}
			if !tc.bad && res.Content != tc.content {
				t.Errorf("content %q, want %q", res.Content, tc.content)
			}
			if res.Canonical != tc.canonical {
				t.Errorf("canonical %v, want %v", res.Canonical, tc.canonical)
			}
		})
	}
}

func FuzzParseHermes(f *testing.F) {
	for _, s := range []string{
		"", "text", "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>",
		"<tool_call>{\"name\":\"a\",\"arguments\":\"{}\"}</tool_call><tool_call>", "<tool_call></tool_call>x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		res, err := ParseHermes(text)
		for _, c := range res.Calls {
			if c.Function.Name == "" {
				t.Fatal("call without a name")
			}
			var obj map[string]json.RawMessage
			if json.Unmarshal([]byte(c.Function.Arguments), &obj) != nil {
				t.Fatalf("arguments %q are not an object", c.Function.Arguments)
			}
		}
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a *FormatError", err)
			}
		}
		if !strings.Contains(text, toolCallOpen) && (len(res.Calls) > 0 || err != nil) {
			t.Fatal("calls found without a block")
		}
	})
}

func FuzzDecodeChatResponse(f *testing.F) {
	for _, s := range []string{okVLLM, okVLLM[:50], "<html></html>", "data: x", "{}", `{"choices":[]}`, `{"choices":[{"finish_reason":"abort"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, ch, err := DecodeChatResponse(body)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			// Only an aborted generation comes with its result.
			if errors.Is(err, ErrAborted) != (resp != nil && ch != nil) || (resp == nil) != (ch == nil) {
				t.Fatalf("result %v, %v with error %v", resp != nil, ch != nil, err)
			}
			if resp == nil {
				return
			}
		}
		if resp == nil || ch == nil {
			t.Fatal("nil result without error")
		}
		t0 := baseTurn(resp, ch, nil)
		_ = checkTokens(t0)
	})
}

func TestSplitReasoning(t *testing.T) {
	r, c := splitReasoning("<think>\nhmm\n</think>\n\nanswer")
	if r != "hmm" || c != "answer" {
		t.Errorf("got %q %q", r, c)
	}
	r, c = splitReasoning("<think>unclosed")
	if r != "" || c != "<think>unclosed" {
		t.Errorf("got %q %q", r, c)
	}
}
