package llm

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Hermes tool-call markers, as Qwen and NousResearch Hermes models write them.
const (
	toolCallOpen  = "<tool_call>"
	toolCallClose = "</tool_call>"
	thinkOpen     = "<think>"
	thinkClose    = "</think>"
)

// HermesResult is what ParseHermes found in a message.
type HermesResult struct {
	// Content is the text with every <tool_call> block removed and the
	// whitespace around the removed blocks trimmed.
	Content string
	// Calls are the well-formed calls, in order, with arguments as a JSON
	// object text.
	Calls []openai.ToolCall
	// Canonical reports that the text is exactly content, an optional "\n",
	// then the blocks each as "<tool_call>\n{json}\n</tool_call>" joined by
	// "\n", every arguments value an object: the layout a Qwen-style chat
	// template re-renders byte for byte from (content, tool_calls).
	Canonical bool
	// Head is the text before the first block with the one separating
	// newline removed; it is what a server-side parser returns as content
	// when Canonical is true.
	Head string
}

// ParseHermes extracts <tool_call>{"name": …, "arguments": …}</tool_call>
// blocks from text. arguments may be a JSON object or a string holding one.
// A block that is unclosed, not JSON, lacks a name, or has other arguments
// yields a *FormatError for the first such block, with its raw text; the
// well-formed calls are still returned. Text without blocks returns no calls
// and a nil error. It never panics.
func ParseHermes(text string) (HermesResult, error) {
	res := HermesResult{Canonical: true}
	first := strings.Index(text, toolCallOpen)
	if first < 0 {
		res.Content, res.Head = text, text
		return res, nil
	}
	var (
		outside  strings.Builder
		firstErr *FormatError
	)
	outside.WriteString(text[:first])
	head := text[:first]
	if head != "" {
		if h, ok := strings.CutSuffix(head, "\n"); ok {
			head = h
		} else {
			res.Canonical = false
		}
	}
	res.Head = head
	rest := text[first:]
	for i := 0; ; i++ {
		body := rest[len(toolCallOpen):]
		end := strings.Index(body, toolCallClose)
		if end < 0 {
			res.Canonical = false
			if firstErr == nil {
				firstErr = &FormatError{Index: i, Raw: rest, Reason: "unclosed <tool_call> block: end each call with </tool_call>"}
			}
			break
		}
		js := body[:end]
		if !strings.HasPrefix(js, "\n") || !strings.HasSuffix(js, "\n") || len(js) < 2 {
			res.Canonical = false
		}
		call, objectArgs, ferr := parseHermesCall(js, i, text)
		if ferr != nil {
			res.Canonical = false
			if firstErr == nil {
				ferr.Raw = rest[:len(toolCallOpen)+end+len(toolCallClose)]
				firstErr = ferr
			}
		} else {
			if !objectArgs {
				res.Canonical = false
			}
			res.Calls = append(res.Calls, call)
		}
		rest = body[end+len(toolCallClose):]
		next := strings.Index(rest, toolCallOpen)
		if next < 0 {
			if rest != "" {
				res.Canonical = false
				outside.WriteString(rest)
			}
			break
		}
		if rest[:next] != "\n" {
			res.Canonical = false
		}
		outside.WriteString(rest[:next])
		rest = rest[next:]
	}
	res.Content = strings.TrimSpace(outside.String())
	if firstErr != nil {
		return res, firstErr
	}
	return res, nil
}

// parseHermesCall decodes one block body. objectArgs reports whether the
// arguments were written as an object (rather than a string).
func parseHermesCall(js string, index int, whole string) (openai.ToolCall, bool, *FormatError) {
	var raw struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal([]byte(js), &raw); err != nil {
		return openai.ToolCall{}, false, &FormatError{Index: index, Reason: fmt.Sprintf("the call is not valid JSON (%v)", err)}
	}
	if raw.Name == nil || *raw.Name == "" {
		return openai.ToolCall{}, false, &FormatError{Index: index, Reason: `the call has no "name" string`}
	}
	args := strings.TrimSpace(string(raw.Arguments))
	objectArgs := true
	switch {
	case args == "" || args == "null":
		args = "{}"
		objectArgs = false
	case args[0] == '{':
	case args[0] == '"':
		var s string
		if err := json.Unmarshal([]byte(args), &s); err != nil {
			return openai.ToolCall{}, false, &FormatError{Index: index, Reason: fmt.Sprintf(`"arguments" string does not decode (%v)`, err)}
		}
		s = strings.TrimSpace(s)
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &obj); err != nil {
			return openai.ToolCall{}, false, &FormatError{Index: index, Reason: fmt.Sprintf(`"arguments" string is not a JSON object (%v)`, err)}
		}
		args = s
		objectArgs = false
	default:
		return openai.ToolCall{}, false, &FormatError{Index: index, Reason: `"arguments" must be a JSON object`}
	}
	return openai.ToolCall{
		ID:       hermesCallID(whole, index),
		Type:     openai.ToolTypeFunction,
		Function: openai.FunctionCall{Name: *raw.Name, Arguments: args},
	}, objectArgs, nil
}

// hermesCallID derives a call id from the message text and the call's
// position, so a retried or replayed parse yields the same id.
func hermesCallID(text string, index int) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(text))
	return fmt.Sprintf("call_%016x_%d", h.Sum64(), index)
}

// splitReasoning splits generated text the way a qwen3 reasoning parser
// does for the layout "<think>\n" + reasoning + "\n</think>\n\n" + rest.
// Text in any other layout is all content.
func splitReasoning(text string) (reasoning, content string) {
	rest, ok := strings.CutPrefix(text, thinkOpen+"\n")
	if !ok {
		return "", text
	}
	r, after, found := strings.Cut(rest, "\n"+thinkClose+"\n\n")
	if !found {
		return "", text
	}
	return r, after
}
