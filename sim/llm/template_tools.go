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
	for i, t := range tools {
		if t.Name == "" {
			return "", fmt.Errorf("tools[%d]: function name is empty", i)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		sig := toolSignature{Type: "function", Function: toolFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters}}
		if err := enc.Encode(sig); err != nil {
			return "", fmt.Errorf("tools[%d] (%s): parameters: %w", i, t.Name, err)
		}
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(strings.TrimSuffix(buf.String(), "\n"))
	}
	b.WriteString(toolsFooter)
	return b.String(), nil
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
