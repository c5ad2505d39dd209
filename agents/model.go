package agents

import (
	"context"
	"encoding/json"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/tools"
)

// Model is what an agent needs from an inference client; *llm.Client
// implements it.
type Model interface {
	// Chat performs one call and returns its token-exact turn. It is safe
	// for concurrent use; a failure after the client's retries is an error,
	// which may come with a partial turn (llm.Turn.Partial) that the agent
	// keeps as the trajectory's last, unfinished turn.
	Chat(ctx context.Context, req llm.Request) (*llm.Turn, error)
}

// Toolbox is what an agent needs from a tool registry; *tools.Registry
// implements it.
type Toolbox interface {
	// Specs returns the function descriptions offered to the model.
	Specs() []tools.Spec
	// Call validates args and runs the named tool. It always returns an
	// observation: failures are described in its text, never returned.
	Call(ctx context.Context, name string, args json.RawMessage) tools.Observation
}

// Snapshotter is a Toolbox whose tools may change between rollouts (an MCP
// server announced a new tool list). Snapshot returns the toolbox one
// rollout uses from its start to its end, so a change never reaches a
// rollout, let alone a turn, in flight.
type Snapshotter interface {
	Snapshot(ctx context.Context) Toolbox
}

var (
	_ Model   = (*llm.Client)(nil)
	_ Toolbox = (*tools.Registry)(nil)
)

// openAITools converts tool specs to the chat request's tools field.
func openAITools(specs []tools.Spec) []openai.Tool {
	out := make([]openai.Tool, 0, len(specs))
	for _, s := range specs {
		out = append(out, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: s.Name, Description: s.Description, Parameters: s.Parameters,
		}})
	}
	return out
}
