package gateway

import "encoding/json"

// The OpenAI Responses API as the gateway reads and answers it (the fields
// of openai-node's ResponseCreateParams and Response that the OpenAI Agents
// SDK and other Responses clients send and read). Fields the engine cannot
// honour are decoded only to be refused by name (responses_call.go).

// responsesRequest is POST …/v1/responses.
type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       json.RawMessage `json:"instructions"`
	PreviousResponseID string          `json:"previous_response_id"`
	Store              *bool           `json:"store"`
	Stream             bool            `json:"stream"`
	Tools              []responsesTool `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	Text               *struct {
		Format *struct {
			Type string `json:"type"`
		} `json:"format"`
	} `json:"text"`
	Include    []string `json:"include"`
	Truncation string   `json:"truncation"`
	Reasoning  *struct {
		Effort *string `json:"effort"`
	} `json:"reasoning"`
	Background   bool            `json:"background"`
	Conversation json.RawMessage `json:"conversation"`
	Prompt       json.RawMessage `json:"prompt"`
	TopLogprobs  *int            `json:"top_logprobs"`
	MaxToolCalls *int            `json:"max_tool_calls"`
}

// responsesTool is one tool of a request; only function tools are served.
type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// responseItem is one input or output item. Input items are decoded into
// it whatever their type, and each type reads its own fields; output items
// are written from it (omitempty keeps each type's shape).
type responseItem struct {
	Type   string `json:"type,omitempty"`
	ID     string `json:"id,omitempty"`
	Status string `json:"status,omitempty"`
	// message
	Role    string          `json:"role,omitempty"`
	Content json.RawMessage `json:"content,omitempty"`
	// function_call, function_call_output
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments *string         `json:"arguments,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
	// reasoning
	Summary json.RawMessage `json:"summary,omitempty"`
}

// contentPart is one part of an input item's content (a message's,
// a reasoning item's, a function call output's).
type contentPart struct {
	Type    string  `json:"type"`
	Text    *string `json:"text"`
	Refusal *string `json:"refusal"`
}

// outputTextPart is an answered message's text part.
type outputTextPart struct {
	Type        string     `json:"type"`
	Text        string     `json:"text"`
	Annotations []struct{} `json:"annotations"`
	Logprobs    []struct{} `json:"logprobs"`
}

// reasoningTextPart is an answered reasoning item's content part.
type reasoningTextPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// responseObject is the Response the gateway answers, stores and streams.
type responseObject struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Model              string             `json:"model"`
	Output             []responseItem     `json:"output"`
	Usage              *responsesUsage    `json:"usage"`
	Error              *struct{}          `json:"error"`
	IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	PreviousResponseID *string            `json:"previous_response_id"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	ToolChoice         string             `json:"tool_choice"`
	Tools              []responsesTool    `json:"tools"`
	Store              bool               `json:"store"`
	Temperature        *float64           `json:"temperature"`
	TopP               *float64           `json:"top_p"`
	Text               responseText       `json:"text"`
	Metadata           map[string]string  `json:"metadata"`
}

type responseText struct {
	Format struct {
		Type string `json:"type"`
	} `json:"format"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

// responsesUsage is the Responses API's usage.
type responsesUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// responsesEvent is one server-sent event of a streamed response; each
// type sets its own fields.
type responsesEvent struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Response       *responseObject `json:"response,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	Item           *responseItem   `json:"item,omitempty"`
	Part           json.RawMessage `json:"part,omitempty"`
	Delta          *string         `json:"delta,omitempty"`
	Text           *string         `json:"text,omitempty"`
	Arguments      *string         `json:"arguments,omitempty"`
	Name           string          `json:"name,omitempty"`
	Logprobs       *[]struct{}     `json:"logprobs,omitempty"`
}
