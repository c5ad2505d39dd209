package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/llm"
)

// Completer is a role's model that also makes raw completions, the prompt
// sent to the engine as the agent rendered it; *llm.Client is one.
type Completer interface {
	// Complete performs one raw completion and returns its token-exact
	// turn; it is safe for concurrent use. On failure the turn, when not
	// nil, is the partial turn of an aborted generation.
	Complete(ctx context.Context, req llm.CompletionRequest) (*llm.Turn, error)
}

// completions serves POST …/v1/completions: the agent applied its own
// template, so the prompt goes to the engine as it is (text or token ids,
// no chat template) through the role's client, and the call joins the
// completions trajectory whose prompt and answer its prompt extends (see
// raw.go).
func (g *Gateway) completions(w http.ResponseWriter, r *http.Request) {
	s, role, ok := g.target(w, r)
	if !ok || !g.enter(w, s.id) {
		return
	}
	defer g.leave(s.id)
	g.cfg.Metrics.called(apiCompletions)
	var req completionRequest
	if !decodeBody(w, r, &req) {
		return
	}
	p, sampling, err := g.completionCall(s, role, req)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	model, ok := g.cfg.Models[role].(Completer)
	if !ok {
		writeError(w, http.StatusNotImplemented, "completions_unsupported",
			fmt.Sprintf("the %s model of this run makes no raw completions (a replayed run); use chat/completions", role))
		return
	}
	t, err := s.acquireRaw(role, r.Header.Get(TrajectoryHeader), strings.TrimSpace(r.Header.Get(DelegationHeader)), p)
	if err != nil {
		acquireFailed(w, s, err)
		return
	}
	if err := g.cfg.Bounds.checkTurns(role, len(t.turns), g.countTurn(s.id, role)); err != nil {
		s.releaseRaw(t, p, nil, err)
		callFailed(w, s, role, err)
		return
	}
	seed := rawSeed(s.seed, role, p, len(t.turns))
	sampling.Seed = &seed
	key := s.id + "/" + role + "/" + t.start.Format(time.RFC3339Nano)
	turn, err := callModel(r, s, func(ctx context.Context) (*llm.Turn, error) {
		return model.Complete(ctx, llm.CompletionRequest{Prompt: p.text, PromptIDs: p.ids, TrajectoryKey: key, Sampling: &sampling})
	})
	s.releaseRaw(t, p, turn, err)
	if err != nil {
		callFailed(w, s, role, err)
		return
	}
	id := "cmpl-" + s.id + "-" + strconv.Itoa(int(time.Since(s.started).Microseconds()))
	choice := textChoice{Text: turn.Message.Content, FinishReason: &turn.FinishReason}
	if req.Logprobs != nil {
		choice.Logprobs = logprobsOf(turn)
	}
	if req.ReturnTokenIDs {
		choice.PromptTokenIDs, choice.TokenIDs = turn.PromptIDs, turn.CompletionIDs
	}
	u := usageOf(turn)
	if req.Stream {
		writeTextStream(w, textCompletion{ID: id, Object: "text_completion", Created: time.Now().Unix(), Model: g.modelName(role)},
			choice, u, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	writeJSON(w, http.StatusOK, textCompletion{ID: id, Object: "text_completion", Created: time.Now().Unix(),
		Model: g.modelName(role), Choices: []textChoice{choice}, Usage: &u})
}

// completionCall checks a completions request and returns its prompt and
// the call's sampling override. The run's sampling settings win, as for
// chat: the agent's temperature and top_p are not sent (a call whose
// differ is counted), its max_tokens is capped, its stop strings are kept.
func (g *Gateway) completionCall(s *session, role string, req completionRequest) (rawPrompt, llm.Sampling, error) {
	p, err := parsePrompt(req.Prompt)
	if err != nil {
		return rawPrompt{}, llm.Sampling{}, err
	}
	switch {
	case req.N != nil && *req.N != 1:
		return rawPrompt{}, llm.Sampling{}, fmt.Errorf("n %d: the gateway samples one choice per call", *req.N)
	case req.BestOf != nil && *req.BestOf != 1:
		return rawPrompt{}, llm.Sampling{}, fmt.Errorf("best_of %d: the gateway samples one choice per call", *req.BestOf)
	case req.Echo:
		return rawPrompt{}, llm.Sampling{}, errors.New("echo: the prompt is not echoed; the agent has it")
	case req.Suffix != nil && *req.Suffix != "":
		return rawPrompt{}, llm.Sampling{}, errors.New("suffix: insertion is not served")
	case req.Logprobs != nil && *req.Logprobs < 0:
		return rawPrompt{}, llm.Sampling{}, fmt.Errorf("logprobs %d: want 0 or more", *req.Logprobs)
	}
	stop, err := stopList(req.Stop)
	if err != nil {
		return rawPrompt{}, llm.Sampling{}, err
	}
	if err := g.cfg.Bounds.checkStop(stop); err != nil {
		return rawPrompt{}, llm.Sampling{}, err
	}
	g.noteSampling(s, role, req.Temperature, req.TopP)
	return p, llm.Sampling{Stop: stop, MaxTokens: g.capTokens(role, req.MaxTokens)}, nil
}

// parsePrompt reads a completions prompt: a non-empty string, a list of
// one string, a non-empty list of token ids, or a list of one such list.
// Several prompts in one call are refused: each call is one turn of one
// trajectory.
func parsePrompt(raw json.RawMessage) (rawPrompt, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return rawPrompt{}, errors.New("prompt: required")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		if text == "" {
			return rawPrompt{}, errors.New("prompt: empty")
		}
		return rawPrompt{text: text}, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return rawPrompt{}, errors.New("prompt: want a string, a list of token ids, or a list of one of them")
	}
	if len(list) == 0 {
		return rawPrompt{}, errors.New("prompt: empty list")
	}
	if first := bytes.TrimSpace(list[0]); len(first) > 0 && (first[0] == '"' || first[0] == '[') {
		if len(list) != 1 {
			return rawPrompt{}, fmt.Errorf("prompt: a list of %d prompts; the gateway takes one prompt per call", len(list))
		}
		if first[0] == '"' {
			return parsePrompt(first)
		}
		return promptIDs(first)
	}
	return promptIDs(raw)
}

// promptIDs reads a non-empty list of token ids.
func promptIDs(raw json.RawMessage) (rawPrompt, error) {
	var ids []int64
	if err := json.Unmarshal(raw, &ids); err != nil {
		return rawPrompt{}, errors.New("prompt: want a list of token ids (integers)")
	}
	if len(ids) == 0 {
		return rawPrompt{}, errors.New("prompt: empty list of token ids")
	}
	out := make([]int32, len(ids))
	for i, id := range ids {
		if id < 0 || id > math.MaxInt32 {
			return rawPrompt{}, fmt.Errorf("prompt: token id %d at %d is out of range", id, i)
		}
		out[i] = int32(id)
	}
	return rawPrompt{ids: out}, nil
}

// logprobsOf is the turn's completion in the completions logprobs shape.
func logprobsOf(t *llm.Turn) *textLogprobs {
	lp := &textLogprobs{Tokens: make([]string, len(t.CompletionIDs)), TokenLogprobs: make([]float64, len(t.CompletionIDs)),
		TopLogprobs: make([]map[string]float64, len(t.CompletionIDs))}
	for i, id := range t.CompletionIDs {
		tok := "token_id:" + strconv.Itoa(int(id))
		lp.Tokens[i] = tok
		if i < len(t.Logprobs) {
			lp.TokenLogprobs[i] = t.Logprobs[i]
		}
		lp.TopLogprobs[i] = map[string]float64{tok: lp.TokenLogprobs[i]}
	}
	return lp
}

// writeTextStream answers a streamed completion as server-sent events of
// head's shape: the text, the finish reason, usage when asked, [DONE].
// The engine's answer is complete before the first event (the client reads
// it whole), so the stream is a few events.
func writeTextStream(w http.ResponseWriter, head textCompletion, c textChoice, u usage, withUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	emit := func(choices []textChoice, u *usage) {
		ev := head
		ev.Choices, ev.Usage = choices, u
		data, _ := json.Marshal(ev)
		fmt.Fprintf(w, "data: %s\n\n", data)
	}
	finish := c.FinishReason
	text := c
	text.FinishReason = nil
	emit([]textChoice{text}, nil)
	emit([]textChoice{{FinishReason: finish}}, nil)
	if withUsage {
		emit([]textChoice{}, &u)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
