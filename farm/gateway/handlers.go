package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/llm"
)

// routes builds the gateway's mux.
func (g *Gateway) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /r/{rollout}/{role}/v1/chat/completions", g.chat)
	mux.HandleFunc("POST /r/{rollout}/{role}/v1/completions", g.completions)
	mux.HandleFunc("POST /r/{rollout}/{role}/v1/responses", g.responses)
	mux.HandleFunc("GET /r/{rollout}/{role}/v1/responses/{id}", g.retrieveResponse)
	mux.HandleFunc("POST /r/{rollout}/{role}/v1/messages", g.messages)
	mux.HandleFunc("GET /r/{rollout}/{role}/v1/models", g.models)
	mux.HandleFunc("GET /v1/tasks/next", g.nextTask)
	mux.HandleFunc("POST /v1/tasks/{rollout}/result", g.postResult)
	mux.HandleFunc("POST /v1/tasks/{rollout}/heartbeat", g.heartbeat)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "route_not_found", fmt.Sprintf("no route %s %s (see docs/gateway.md)", r.Method, r.URL.Path))
	})
	return mux
}

// target resolves a role route's rollout and role, answering 404 or 409
// when it cannot.
func (g *Gateway) target(w http.ResponseWriter, r *http.Request) (*session, string, bool) {
	s, ok := g.session(w, r.PathValue("rollout"))
	if !ok {
		return nil, "", false
	}
	role := r.PathValue("role")
	if !slices.Contains(g.roles, role) {
		writeError(w, http.StatusNotFound, "role_not_found",
			fmt.Sprintf("no role %q in mode %s: its roles are %s", role, g.cfg.Mode, strings.Join(g.roles, ", ")))
		return nil, "", false
	}
	return s, role, true
}

// modelName is the name the gateway answers for role.
func (g *Gateway) modelName(role string) string {
	if n := g.cfg.ModelNames[role]; n != "" {
		return n
	}
	return role
}

func (g *Gateway) models(w http.ResponseWriter, r *http.Request) {
	if _, role, ok := g.target(w, r); ok {
		writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []modelInfo{{ID: g.modelName(role), Object: "model", OwnedBy: "mgrpo"}}})
	}
}

// call is one model call the gateway forwards: the request as the client
// takes it and how to answer.
type call struct {
	msgs      []openai.ChatCompletionMessage
	tools     []openai.Tool
	sampling  llm.Sampling
	stream    bool
	withUsage bool
}

func (g *Gateway) chat(w http.ResponseWriter, r *http.Request) {
	s, role, ok := g.target(w, r)
	if !ok || !g.enter(w, s.id) {
		return
	}
	defer g.leave(s.id)
	g.cfg.Metrics.called(apiChat)
	var req chatRequest
	if !g.decodeChatBody(w, r, &req) {
		return
	}
	c, err := g.chatCall(s, role, req)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	turn, answer, ok := g.forward(w, r, s, role, c)
	if !ok {
		return
	}
	id := "chatcmpl-" + s.id + "-" + strconv.Itoa(int(time.Since(s.started).Microseconds()))
	if c.stream {
		writeStream(w, id, g.modelName(role), turn, answer, c.withUsage)
		return
	}
	content := answer.Content
	writeJSON(w, http.StatusOK, chatCompletion{ID: id, Object: "chat.completion", Created: time.Now().Unix(), Model: g.modelName(role),
		Choices: []chatChoice{{Message: answerMessage{Role: openai.ChatMessageRoleAssistant, Content: &content,
			ReasoningContent: answer.ReasoningContent, ToolCalls: answer.ToolCalls}, FinishReason: finishReason(turn, answer)}},
		Usage: usageOf(turn)})
}

// chatCall checks a chat request and turns it into the client's call. The
// run's sampling settings win: the agent's temperature and top_p are not
// sent (a call whose differ is counted), its max_tokens is capped.
func (g *Gateway) chatCall(s *session, role string, req chatRequest) (call, error) {
	if len(req.Messages) == 0 {
		return call{}, errors.New("messages: at least one message is required")
	}
	if req.N != nil && *req.N != 1 {
		return call{}, fmt.Errorf("n %d: the gateway samples one choice per call", *req.N)
	}
	c := call{tools: req.Tools, stream: req.Stream, withUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	c.msgs = make([]openai.ChatCompletionMessage, len(req.Messages))
	for i, m := range req.Messages {
		var err error
		if c.msgs[i], err = m.message(); err != nil {
			return call{}, fmt.Errorf("messages[%d]: %w", i, err)
		}
	}
	stop, err := stopList(req.Stop)
	if err != nil {
		return call{}, err
	}
	c.sampling.Stop = stop
	c.sampling.MaxTokens = g.capTokens(role, req.MaxCompletionTokens, req.MaxTokens)
	if err := g.cfg.Bounds.checkCall(c); err != nil {
		return call{}, err
	}
	g.noteSampling(s, role, req.Temperature, req.TopP)
	return c, nil
}

// capTokens is the call's completion cap: the agent's, at most the run's.
func (g *Gateway) capTokens(role string, caps ...*int) int {
	limit := g.cfg.MaxTokens[role]
	agent := 0
	for _, c := range caps {
		if c != nil && *c > 0 {
			agent = *c
			break
		}
	}
	switch {
	case limit == 0:
		return agent
	case agent == 0 || agent > limit:
		return limit
	}
	return agent
}

// noteSampling counts (and logs) a call whose own sampling settings differ
// from the run's, which replaced them.
func (g *Gateway) noteSampling(s *session, role string, temp, topP *float64) {
	run := g.cfg.Sampling[role]
	differs := func(agent, run *float64) bool { return agent != nil && (run == nil || *agent != *run) }
	if !differs(temp, run.Temperature) && !differs(topP, run.TopP) {
		return
	}
	s.mu.Lock()
	s.overrides++
	first := s.overrides == 1
	s.mu.Unlock()
	if first {
		g.cfg.Logger.Info("gateway: the run's sampling settings replace the agent's", "rollout", s.id, "role", role,
			"agent_temperature", fmtFloat(temp), "agent_top_p", fmtFloat(topP))
	}
}

func fmtFloat(p *float64) string {
	if p == nil {
		return "unset"
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}

// forward makes the call through the role's client within the rollout's
// trajectory and records its turn. On failure it has answered already and
// ok is false.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, s *session, role string, c call) (*llm.Turn, openai.ChatCompletionMessage, bool) {
	t, err := s.acquire(role, r.Header.Get(TrajectoryHeader), strings.TrimSpace(r.Header.Get(DelegationHeader)), c.msgs)
	if err != nil {
		acquireFailed(w, s, err)
		return nil, openai.ChatCompletionMessage{}, false
	}
	if err := g.cfg.Bounds.checkTurns(role, len(t.turns), g.countTurn(s.id, role)); err != nil {
		s.release(t, c.msgs, nil, nil, err)
		callFailed(w, s, role, err)
		return nil, openai.ChatCompletionMessage{}, false
	}
	seed := callSeed(s.seed, role, c.msgs, len(t.turns))
	c.sampling.Seed = &seed
	key := s.id + "/" + role + "/" + t.start.Format(time.RFC3339Nano)
	if t.edit != nil || t.tokens.Covered() != len(t.msgs) {
		// A history edit starts a new sequence; so does a state that does
		// not hold the conversation the request was matched against (the
		// last call failed before it answered). The client then renders
		// the whole request.
		t.tokens.Reset()
	}
	// The request's first len(t.msgs) messages were matched by meaning
	// against the conversation the token state holds (pick, prefixOf):
	// the client continues from the sampled ids and renders only the
	// messages after them.
	cuts := t.tokens.ContextCuts()
	turn, err := callModel(r, s, func(ctx context.Context) (*llm.Turn, error) {
		return g.cfg.Models[role].Chat(ctx, llm.Request{Messages: c.msgs, Tools: c.tools, TrajectoryKey: key,
			Sampling: &c.sampling, Prefix: &t.prefix, Tokens: &t.tokens})
	})
	// The client cut the sequence where the context could not hold it:
	// the turn starts a new one, recorded as a context cut.
	t.cut = t.tokens.ContextCuts() > cuts && len(t.turns) > 0
	if err != nil {
		s.release(t, c.msgs, turn, nil, err)
		callFailed(w, s, role, err)
		return nil, openai.ChatCompletionMessage{}, false
	}
	answer := answerOf(turn, len(t.turns))
	s.release(t, c.msgs, turn, &answer, nil)
	return turn, answer, true
}

// callModel makes one model call of rollout s for the agent's request r:
// the call ends with the request or with the rollout, whichever ends
// first. A generation that ended before the model finished it is a
// failure, returned with its partial turn.
func callModel(r *http.Request, s *session, do func(ctx context.Context) (*llm.Turn, error)) (*llm.Turn, error) {
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	stop := context.AfterFunc(s.ctx, func() { cancel(errFinished) })
	defer stop()
	turn, err := do(ctx)
	if err == nil && turn.Partial() {
		err = fmt.Errorf("the generation ended before the model finished it (%s)", turn.FinishReason)
	}
	return turn, err
}

// acquireFailed answers a call whose trajectory could not be taken: 409,
// the rollout finished or the trajectory is busy.
func acquireFailed(w http.ResponseWriter, s *session, err error) {
	code := "trajectory_busy"
	if errors.Is(err, errFinished) {
		code = "rollout_finished"
		err = fmt.Errorf("rollout %s has finished", s.id)
	}
	writeError(w, http.StatusConflict, code, err.Error())
}

// callFailed answers a model call that failed: 409 when the rollout ended
// under it; 400 (or 413) in the API's shape when the request was the
// agent's fault (over the context window or a bound, refused by the engine
// for its content); else 502, the engine's failure.
func callFailed(w http.ResponseWriter, s *session, role string, err error) {
	if s.ctx.Err() != nil {
		writeError(w, http.StatusConflict, "rollout_finished", fmt.Sprintf("rollout %s has finished", s.id))
		return
	}
	if f := faultOf(err); f.agents() {
		status, code := agentErrorAnswer(err, f)
		writeError(w, status, code, fmt.Sprintf("the %s model call was refused: %v", role, err))
		return
	}
	writeError(w, http.StatusBadGateway, "engine_error", fmt.Sprintf("the %s model call failed: %v", role, err))
}

// answerOf is the assistant message returned to the agent: the engine's,
// with the tool calls as the engine or the client parsed them (Hermes blocks
// in the content), each with an id and type.
func answerOf(t *llm.Turn, turnIndex int) openai.ChatCompletionMessage {
	m := t.Message
	m.Role = openai.ChatMessageRoleAssistant
	m.ToolCalls = make([]openai.ToolCall, len(t.ToolCalls))
	for i, tc := range t.ToolCalls {
		if tc.ID == "" {
			tc.ID = fmt.Sprintf("call_%d_%d", turnIndex, i)
		}
		tc.Type = openai.ToolTypeFunction
		idx := i
		tc.Index = &idx
		m.ToolCalls[i] = tc
	}
	if len(m.ToolCalls) == 0 {
		m.ToolCalls = nil
	}
	return m
}

// finishReason is OpenAI's: tool_calls when the answer calls tools.
func finishReason(t *llm.Turn, m openai.ChatCompletionMessage) string {
	if len(m.ToolCalls) > 0 && t.FinishReason == "stop" {
		return "tool_calls"
	}
	return t.FinishReason
}

func usageOf(t *llm.Turn) usage {
	p, c := t.Usage.PromptTokens, t.Usage.CompletionTokens
	if p == 0 {
		p = len(t.PromptIDs)
	}
	if c == 0 {
		c = len(t.CompletionIDs)
	}
	return usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
}

// callSeed derives a call's seed from the rollout's, the role, the
// conversation's opening and the turn's position in its trajectory, so a
// rollout retried with the same seed samples the same way whatever order
// its parallel calls come in.
func callSeed(seed int64, role string, msgs []openai.ChatCompletionMessage, turn int) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d", seed, role, turn)
	for _, m := range msgs {
		fmt.Fprintf(h, "/%s:%s", m.Role, m.Content)
		if m.Role == openai.ChatMessageRoleUser {
			break
		}
	}
	return int64(h.Sum64() >> 1)
}

// decodeBody reads a JSON request body into v, answering 400 (or 413) in
// OpenAI's error shape when it cannot.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	return readBody(w, r, func(data []byte) error { return json.Unmarshal(data, v) })
}

// readBody reads a request body and decodes it with decode, answering as
// decodeBody does.
func readBody(w http.ResponseWriter, r *http.Request, decode func([]byte) error) bool {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		bodyError(w, err)
		return false
	}
	if err := decode(data); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_json", fmt.Sprintf("request body: %v", err))
		return false
	}
	return true
}

// writeStream answers as server-sent events: the role, the reasoning and
// content, each tool call, the finish reason, usage when asked, [DONE].
// The engine's answer is complete before the first event (the client reads
// it whole), so the stream is a few events.
func writeStream(w http.ResponseWriter, id, model string, t *llm.Turn, m openai.ChatCompletionMessage, withUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	created := time.Now().Unix()
	emit := func(d chunkDelta, finish *string, u *usage) {
		ch := chatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, Usage: u}
		if u == nil || finish != nil || d.Role != "" {
			ch.Choices = []chunkChoice{{Delta: d, FinishReason: finish}}
		} else {
			ch.Choices = []chunkChoice{}
		}
		data, _ := json.Marshal(ch)
		fmt.Fprintf(w, "data: %s\n\n", data)
	}
	empty := ""
	emit(chunkDelta{Role: openai.ChatMessageRoleAssistant, Content: &empty}, nil, nil)
	if m.ReasoningContent != "" {
		emit(chunkDelta{ReasoningContent: m.ReasoningContent}, nil, nil)
	}
	if m.Content != "" {
		content := m.Content
		emit(chunkDelta{Content: &content}, nil, nil)
	}
	for i, tc := range m.ToolCalls {
		emit(chunkDelta{ToolCalls: []chunkToolCall{{Index: i, ID: tc.ID, Type: string(openai.ToolTypeFunction), Function: tc.Function}}}, nil, nil)
	}
	finish := finishReason(t, m)
	emit(chunkDelta{}, &finish, nil)
	if withUsage {
		u := usageOf(t)
		emit(chunkDelta{}, nil, &u)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
