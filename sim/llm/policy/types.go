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
	// Filters are the request's top-k, top-p and min-p, applied to every
	// decision's tempered outcomes before it is sampled.
	Filters Filters
	// Logprobs is which distribution Output.Logprob describes (raw by
	// default).
	Logprobs LogprobsMode
	// NoReasoning drops the turn's reasoning, as a server does when the
	// template prefilled an empty think block (enable_thinking=false). It
	// is part of the request so that Score sees the same text.
	NoReasoning bool
	// Params are the decision parameters to sample with; nil means the
	// policy's own (DefaultParams of its skills).
	Params *Params
}

// Output is one assistant turn. The server renders it canonically as
// "<think>\n"+Reasoning+"\n</think>\n\n" (when Reasoning is not empty) +
// Content + one "<tool_call>\n{…}\n</tool_call>" block per call, then
// tokenizes that text.
type Output struct {
	Reasoning string
	Content   string
	ToolCalls []ToolCall
	// ChoiceProb is exp(Logprob).
	ChoiceProb float64
	// Logprob is the log-probability, under the request's Params, of the
	// decisions this turn made (0 when it made none), as the request's
	// Logprobs mode reports it: by default before temperature and
	// filters. The server puts it on the turn's first token. Score
	// recovers the raw value from the output alone (ReportedLogprob turns
	// it into the others).
	Logprob float64
	// Decisions are the decisions of the turn, in the order made.
	Decisions []Decision
}
