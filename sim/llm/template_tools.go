package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// The tools section the template appends to the system turn: one JSON
// signature per line between <tools> tags, then how to call them.
const (
	toolsHeader = "# Tools\n\nThese functions are available; their JSON signatures are listed between <tools> tags:\n<tools>\n"
	toolsFooter = "\n</tools>\n\nTo call a function, write a JSON object with its name and arguments between <tool_call> tags:\n" +
		ToolCallOpen + "\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n" + ToolCallClose
)

// toolSignature is the JSON layout of one tool in the tools section, in the
// OpenAI request shape.
type toolSignature struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// toolsSection renders tools for the system turn.
func toolsSection(tools []policy.Tool) (string, error) {
	var b strings.Builder
	b.WriteString(toolsHeader)
	e := getEnc()
	defer putEnc(e)
	for i, t := range tools {
		if t.Name == "" {
			return "", fmt.Errorf("tools[%d]: function name is empty", i)
		}
		sig, err := appendToolSignature(e.b[:0], t)
		if err != nil {
			return "", fmt.Errorf("tools[%d] (%s): parameters: %w", i, t.Name, err)
		}
		e.b = sig
		if i > 0 {
			b.WriteString("\n")
		}
		b.Write(sig)
	}
	b.WriteString(toolsFooter)
	return b.String(), nil
}

// appendToolSignature appends t's line of the tools section: its
// toolSignature as encoding/json writes it without HTML escapes. It is
// written by hand because every request carries the same tools and
// reflection over them cost more than the rest of the template; the
// parameters are compacted as encoding/json compacts a json.RawMessage, and
// when they are not valid JSON the error is encoding/json's own.
func appendToolSignature(b []byte, t policy.Tool) ([]byte, error) {
	start := len(b)
	e := jsonEnc{b: b}
	e.key("{", "type")
	e.str("function")
	e.key(",", "function")
	e.key("{", "name")
	e.str(t.Name)
	if t.Description != "" {
		e.key(",", "description")
		e.str(t.Description)
	}
	if len(t.Parameters) > 0 {
		e.key(",", "parameters")
		buf := bytes.NewBuffer(e.b)
		if json.Compact(buf, t.Parameters) != nil {
			return appendToolSignatureReflect(b[:start], t)
		}
		e.b = buf.Bytes()
	}
	e.raw("}}")
	return e.b, nil
}

// appendToolSignatureReflect is appendToolSignature through encoding/json.
func appendToolSignatureReflect(b []byte, t policy.Tool) ([]byte, error) {
	sig := toolSignature{Type: "function", Function: toolFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters}}
	js, err := marshalReflect(sig)
	if err != nil {
		return nil, err
	}
	return append(b, js...), nil
}

// parseToolsSection splits a system turn into the system prompt and the
// tools it declares. A system turn without a tools section returns it whole.
func parseToolsSection(system string) (prompt string, tools []policy.Tool, err error) {
	start := strings.Index(system, toolsHeader)
	if start < 0 {
		return system, nil, nil
	}
	body, _, found := strings.Cut(system[start+len(toolsHeader):], toolsFooter)
	if !found {
		return system, nil, nil
	}
	for i, line := range strings.Split(body, "\n") {
		var sig toolSignature
		if err := json.Unmarshal([]byte(line), &sig); err != nil {
			return system, nil, fmt.Errorf("tools section line %d: %w", i+1, err)
		}
		tools = append(tools, policy.Tool{Name: sig.Function.Name, Description: sig.Function.Description, Parameters: sig.Function.Parameters})
	}
	return strings.TrimSuffix(system[:start], "\n\n"), tools, nil
}
