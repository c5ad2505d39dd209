package gateway

import (
	"encoding/json"
	"net/http"
	"slices"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/llm"
)

// messages serves POST …/v1/messages, the Anthropic Messages API: the
// request becomes the messages of a chat call, which goes the way of every
// chat completions call (trajectory matching, bounds, the role's client),
// and the engine's answer comes back as content blocks. Errors are in
// Anthropic's shape (messages_errors.go).
func (g *Gateway) messages(w http.ResponseWriter, r *http.Request) {
	s, role, ok := g.target(w, r)
	if !ok || !g.enter(w, s.id) {
		return
	}
	defer g.leave(s.id)
	g.cfg.Metrics.called(apiMessages)
	var req messagesRequest
	if !decodeBody(w, r, &req) {
		g.cfg.Metrics.refusedCall(apiMessages)
		return
	}
	c, err := g.messagesCall(s, role, req)
	if err != nil {
		g.cfg.Metrics.refusedCall(apiMessages)
		writeRefusal(w, err)
		return
	}
	turn, answer, ok := g.forward(w, r, s, role, c)
	if !ok {
		return
	}
	msg := g.anthropicAnswer(role, req, turn, answer)
	if len(answer.ToolCalls) > 0 {
		g.memory.with(s.id, func(m *rolloutMemory) {
			for _, tc := range answer.ToolCalls {
				if !m.full() {
					m.toolArgs[tc.ID] = tc.Function.Arguments
				}
			}
		})
	}
	if req.Stream {
		writeMessagesStream(w, msg)
		return
	}
	writeJSON(w, http.StatusOK, msg)
}

// anthropicAnswer is the engine's answer as a Message: its reasoning as a
// thinking block (with an empty signature: nothing signs it), its text,
// each tool call as a tool_use block whose input is the call's arguments
// (an object; {} when the engine's text is none, which the gateway
// remembers and maps back).
func (g *Gateway) anthropicAnswer(role string, req messagesRequest, t *llm.Turn, m openai.ChatCompletionMessage) anthropicMessage {
	out := anthropicMessage{ID: "msg_" + newID(), Type: "message", Role: "assistant", Model: g.modelName(role), Content: []anthropicBlock{}}
	if m.ReasoningContent != "" {
		thinking, sig := m.ReasoningContent, ""
		out.Content = append(out.Content, anthropicBlock{Type: "thinking", Thinking: &thinking, Signature: &sig})
	}
	if m.Content != "" || len(m.ToolCalls) == 0 {
		text := m.Content
		out.Content = append(out.Content, anthropicBlock{Type: "text", Text: &text})
	}
	for _, tc := range m.ToolCalls {
		input := json.RawMessage("{}")
		if isObject(tc.Function.Arguments) {
			input = json.RawMessage(tc.Function.Arguments)
		}
		out.Content = append(out.Content, anthropicBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: input})
	}
	stop := "end_turn"
	switch {
	case len(m.ToolCalls) > 0:
		stop = "tool_use"
	case t.FinishReason == "length":
		stop = "max_tokens"
	case t.StopReason != "" && slices.Contains(req.StopSequences, t.StopReason):
		stop = "stop_sequence"
		seq := t.StopReason
		out.StopSequence = &seq
	}
	out.StopReason = &stop
	u := usageOf(t)
	out.Usage = anthropicUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	return out
}
