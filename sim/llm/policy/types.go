package policy

import (
	"encoding/json"
	"math/rand/v2"
)

// Message is one chat message as the policy sees it, after the server has
// decoded the wire format or parsed a raw ChatML prompt.
type Message struct {
	Role       string     // system, user, assistant or tool
	Content    string     // text content (for assistant: without reasoning and tool-call text)
	Reasoning  string     // assistant reasoning (the text of a <think> block), if any
	ToolCalls  []ToolCall // assistant tool calls
	ToolCallID string     // tool messages: the call answered
	Name       string     // tool messages: the tool's name, when the client sent it
}

// ToolCall is one function call. Arguments is the JSON text of the
// arguments object; the policy emits deliberately malformed JSON here when
// its skills say so, and the server renders it verbatim.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Tool is one function offered to the model.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Request is everything the policy may look at for one generation.
type Request struct {
	Messages []Message
	Tools    []Tool
	// Temperature 0 means greedy: every choice takes its most probable
	// option. Above 0, choice probabilities p are sharpened or flattened as
	// p^(1/T) and then sampled with Rand.
	Temperature float64
	Rand        *rand.Rand
}

// Output is one assistant turn. The server renders it canonically as
// "<think>\n"+Reasoning+"\n</think>\n\n" (when Reasoning is not empty) +
// Content + one "<tool_call>\n{…}\n</tool_call>" block per call, then
// tokenizes that text.
type Output struct {
	Reasoning string
	Content   string
	ToolCalls []ToolCall
	// ChoiceProb is the probability, under the policy's own distribution
	// (before temperature), of the choices this turn made; the server turns
	// it into the logprob of the turn's first token so logprobs carry the
	// signal an RL trainer expects.
	ChoiceProb float64
}
