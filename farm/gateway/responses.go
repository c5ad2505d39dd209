package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/llm"
)

// responses serves POST …/v1/responses, the OpenAI Responses API (the
// OpenAI Agents SDK's default model): the request's instructions, earlier
// response and input items become the messages of a chat call, which goes
// the way of every chat completions call (trajectory matching, bounds, the
// role's client), and the engine's answer comes back as output items.
func (g *Gateway) responses(w http.ResponseWriter, r *http.Request) {
	s, role, ok := g.target(w, r)
	if !ok || !g.enter(w, s.id) {
		return
	}
	defer g.leave(s.id)
	g.cfg.Metrics.called(apiResponses)
	var req responsesRequest
	if !decodeBody(w, r, &req) {
		g.cfg.Metrics.refusedCall(apiResponses)
		return
	}
	c, conv, err := g.responsesCall(s, role, req)
	if err != nil {
		g.cfg.Metrics.refusedCall(apiResponses)
		writeRefusal(w, err)
		return
	}
	turn, answer, ok := g.forward(w, r, s, role, c)
	if !ok {
		return
	}
	resp := g.responseOf(role, req, turn, answer)
	if req.Store == nil || *req.Store {
		g.rememberResponse(s.id, role, req, append(conv, answer), resp)
	}
	if req.Stream {
		writeResponsesStream(w, resp)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// retrieveResponse serves GET …/v1/responses/{id}: a stored response of
// the rollout's role, as it was answered.
func (g *Gateway) retrieveResponse(w http.ResponseWriter, r *http.Request) {
	s, role, ok := g.target(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	var found *responseObject
	g.memory.with(s.id, func(m *rolloutMemory) {
		if st := m.responses[id]; st != nil && st.role == role {
			body := st.body
			found = &body
		}
	})
	if found == nil {
		writeError(w, http.StatusNotFound, "response_not_found", fmt.Sprintf("no response %q among this rollout's stored %s responses", id, role))
		return
	}
	writeJSON(w, http.StatusOK, found)
}

// writeRefusal answers a refused request with 400 in OpenAI's error shape,
// naming the field when the refusal does.
func writeRefusal(w http.ResponseWriter, err error) {
	body := errorBody{Error: errorDetail{Message: err.Error(), Type: errorType(http.StatusBadRequest), Code: "invalid_request"}}
	var fe *fieldError
	if errors.As(err, &fe) {
		body.Error.Param = &fe.param
	}
	writeJSON(w, http.StatusBadRequest, body)
}

// responseOf is the engine's answer as a Response: its reasoning as a
// reasoning item (reasoning_text content), its text as a message, each tool
// call as a function_call item carrying the call id the gateway answered.
func (g *Gateway) responseOf(role string, req responsesRequest, t *llm.Turn, m openai.ChatCompletionMessage) responseObject {
	resp := responseObject{ID: "resp_" + newID(), Object: "response", CreatedAt: time.Now().Unix(), Status: "completed",
		Model: g.modelName(role), Output: outputItems(m), MaxOutputTokens: req.MaxOutputTokens, ParallelToolCalls: true,
		ToolChoice: "auto", Tools: req.Tools, Store: req.Store == nil || *req.Store, Temperature: req.Temperature, TopP: req.TopP,
		Metadata: map[string]string{}}
	if resp.Tools == nil {
		resp.Tools = []responsesTool{}
	}
	resp.Text.Format.Type = "text"
	if s, err := instructionsText(req.Instructions); err == nil && s != "" {
		resp.Instructions = &s
	}
	if req.PreviousResponseID != "" {
		p := req.PreviousResponseID
		resp.PreviousResponseID = &p
	}
	if t.FinishReason == "length" {
		resp.Status = "incomplete"
		resp.IncompleteDetails = &incompleteDetails{Reason: "max_output_tokens"}
	}
	u := usageOf(t)
	resp.Usage = &responsesUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	return resp
}

// outputItems are an answer's output items.
func outputItems(m openai.ChatCompletionMessage) []responseItem {
	var out []responseItem
	if m.ReasoningContent != "" {
		content, _ := json.Marshal([]reasoningTextPart{{Type: "reasoning_text", Text: m.ReasoningContent}})
		out = append(out, responseItem{Type: "reasoning", ID: "rs_" + newID(), Summary: json.RawMessage("[]"), Content: content})
	}
	if m.Content != "" || len(m.ToolCalls) == 0 {
		content, _ := json.Marshal([]outputTextPart{{Type: "output_text", Text: m.Content, Annotations: []struct{}{}, Logprobs: []struct{}{}}})
		out = append(out, responseItem{Type: "message", ID: "msg_" + newID(), Status: "completed", Role: openai.ChatMessageRoleAssistant, Content: content})
	}
	for _, tc := range m.ToolCalls {
		args := tc.Function.Arguments
		out = append(out, responseItem{Type: "function_call", ID: "fc_" + newID(), Status: "completed", CallID: tc.ID,
			Name: tc.Function.Name, Arguments: &args})
	}
	return out
}

// rememberResponse keeps a stored response, its output items and the
// input items that carry an id, for later previous_response_id,
// item_reference and GET calls of the rollout.
func (g *Gateway) rememberResponse(rollout, role string, req responsesRequest, conv []openai.ChatCompletionMessage, resp responseObject) {
	var inputs []responseItem
	if !isNull(req.Input) && req.Input[0] == '[' {
		_ = json.Unmarshal(req.Input, &inputs) // decoded once already
	}
	g.memory.with(rollout, func(m *rolloutMemory) {
		if m.full() {
			return
		}
		m.responses[resp.ID] = &storedResponse{role: role, conv: conv, body: resp}
		for _, it := range inputs {
			if it.ID != "" && it.Type != "item_reference" {
				m.items[it.ID] = it
			}
		}
		for _, it := range resp.Output {
			m.items[it.ID] = it
		}
	})
}
