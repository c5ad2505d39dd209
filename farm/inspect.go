package farm

import (
	"encoding/json"
	"fmt"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
)

// inspectionRecord returns the rollouts.jsonl line of r. Step files must be
// a pure function of the run's inputs, so the tree is recorded without what
// depends on timing or on the order in which concurrent rollouts ran:
// start times, durations and latencies (written as zero), the serving
// endpoint and its attempt count, tool cache hits, and the tool call ids
// servers generate at random (vLLM does), which are renumbered "call-T-I"
// for call I of turn T wherever they appear. Token ids and logprobs are
// left out too: the samples hold them, and the per-turn prompt ids would
// make the file quadratic in the conversation length. Messages, tool calls,
// observations, answers, errors and their failure classes, finish reasons
// and usage stay; the endpoint a failure names and a rollout's retries
// (which depend on routing and timing) are in the store's result and the
// step's summary instead.
func inspectionRecord(t Task, r *RolloutResult) ([]byte, error) {
	tree, err := treeRecord(r.Tree)
	if err != nil {
		return nil, err
	}
	rec := rollout.RolloutRecord{ID: r.Task.ID(), Task: r.Task, Question: t.Question, GoldAnswer: t.Answer, Error: r.Error,
		FailureKind: r.FailureKind, FailureCause: r.FailureCause, Scores: r.Scores, Tree: tree}
	rec.Drifts = append(rec.Drifts, r.Planner.Drifts)
	errs := []string{r.Planner.SequenceError}
	edits, cuts := []int{r.Planner.HistoryEdits}, []int{r.Planner.ContextCuts}
	failed := r.Planner.SequenceError != ""
	anyEdit, anyCut := r.Planner.HistoryEdits > 0, r.Planner.ContextCuts > 0
	for _, e := range r.Executors {
		rec.Drifts = append(rec.Drifts, e.Drifts)
		errs = append(errs, e.SequenceError)
		edits, cuts = append(edits, e.HistoryEdits), append(cuts, e.ContextCuts)
		failed = failed || e.SequenceError != ""
		anyEdit, anyCut = anyEdit || e.HistoryEdits > 0, anyCut || e.ContextCuts > 0
	}
	if failed {
		rec.SequenceErrors = errs
	}
	if anyEdit {
		rec.HistoryEdits = edits
	}
	if anyCut {
		rec.ContextCuts = cuts
	}
	return json.Marshal(rec)
}

// treeRecord returns the record of t without timing, routing and token
// data.
func treeRecord(t *agents.Rollout) (*rollout.TreeRecord, error) {
	c := &rollout.TreeRecord{Question: t.Question, Answer: t.Answer, Executors: make([]*rollout.TrajectoryRecord, len(t.Executors))}
	var err error
	if c.Planner, err = trajectoryRecord(t.Planner); err != nil {
		return nil, fmt.Errorf("planner: %w", err)
	}
	for i, e := range t.Executors {
		if c.Executors[i], err = trajectoryRecord(e); err != nil {
			return nil, fmt.Errorf("executor %d: %w", i, err)
		}
	}
	for i, f := range t.Foreign {
		fr, err := trajectoryRecord(f)
		if err != nil {
			return nil, fmt.Errorf("foreign call %d: %w", i, err)
		}
		c.Foreign = append(c.Foreign, fr)
	}
	c.Unmatched = t.Unmatched
	return c, nil
}

// trajectoryRecord returns the record of tr without timing, routing and
// token data; nil stays nil.
func trajectoryRecord(tr *agents.Trajectory) (*rollout.TrajectoryRecord, error) {
	if tr == nil {
		return nil, nil
	}
	c := &rollout.TrajectoryRecord{Role: tr.Role, Index: tr.Index, Task: tr.Task, Final: tr.Final, Answer: tr.Answer,
		FormatOK: tr.FormatOK, FormatErrors: tr.FormatErrors, Error: tr.Error,
		FailureKind: tr.FailureKind, FailureCause: tr.FailureCause, FailureTurn: tr.FailureTurn, AnswerNow: tr.AnswerNow}
	for _, sp := range tr.Splits {
		c.Splits = append(c.Splits, rollout.SplitRecord{Turn: sp.Turn, Reason: sp.Reason, Message: sp.Message, Detail: sp.Detail})
	}
	ids := map[string]string{}
	renumber := func(calls []openai.ToolCall, turn int) []rollout.ToolCallRecord {
		if calls == nil {
			return nil
		}
		out := make([]rollout.ToolCallRecord, len(calls))
		for j, call := range calls {
			id, ok := ids[call.ID]
			if !ok {
				id = fmt.Sprintf("call-%d-%d", turn, j)
				ids[call.ID] = id
			}
			out[j] = rollout.ToolCallRecord{Index: call.Index, ID: id, Type: string(call.Type),
				Function: rollout.FunctionCallRecord{Name: call.Function.Name, Arguments: call.Function.Arguments}}
		}
		return out
	}
	c.Turns = make([]*rollout.TurnRecord, len(tr.Turns))
	for i, turn := range tr.Turns {
		if turn == nil {
			continue
		}
		msg, err := messageRecord(turn.Message)
		if err != nil {
			return nil, fmt.Errorf("turn %d: %w", i, err)
		}
		msg.ToolCalls = renumber(turn.Message.ToolCalls, i)
		c.Turns[i] = &rollout.TurnRecord{Message: msg, ToolCalls: renumber(turn.ToolCalls, i),
			ToolCallError: toolCallErrorRecord(turn.ToolCallError), FinishReason: turn.FinishReason,
			Abort: abortRecord(turn.Abort), StopReason: turn.StopReason, Usage: usageRecord(turn.Usage),
			WeightVersion: turn.WeightVersion, Sampling: samplingRecord(turn.Sampling)}
	}
	c.Steps = make([]rollout.StepRecord, len(tr.Steps))
	for i, s := range tr.Steps {
		sc := rollout.StepRecord{FormatError: s.FormatError, FormatRaw: s.FormatRaw, Calls: make([]rollout.CallRecord, len(s.Calls))}
		for j, call := range s.Calls {
			id := call.ID
			if n, ok := ids[call.ID]; ok {
				id = n
			}
			m := call.Meta
			sc.Calls[j] = rollout.CallRecord{ID: id, Name: call.Name, Arguments: call.Arguments, Observation: call.Observation,
				Executor: call.Executor, Meta: rollout.CallMeta{Tool: m.Tool, Provider: m.Provider, Requests: m.Requests,
					Bytes: m.Bytes, Class: m.Class, Partial: m.Partial, Error: m.Error}}
		}
		c.Steps[i] = sc
	}
	return c, nil
}

// messageRecord returns the record of an assistant message, without its
// tool calls (the caller renumbers them). It fails, as go-openai's encoding
// of the message does, when the message has both text and multi-part
// content.
func messageRecord(m openai.ChatCompletionMessage) (rollout.MessageRecord, error) {
	r := rollout.MessageRecord{Role: m.Role, Content: m.Content, Refusal: m.Refusal, Name: m.Name,
		ReasoningContent: m.ReasoningContent, ToolCallID: m.ToolCallID}
	if m.Content != "" && m.MultiContent != nil {
		return r, fmt.Errorf("encode message: %w", rollout.ErrContentAndParts)
	}
	if len(m.MultiContent) > 0 {
		parts, err := json.Marshal(m.MultiContent)
		if err != nil {
			return r, fmt.Errorf("encode message content: %w", err)
		}
		r.Parts = parts
	}
	if f := m.FunctionCall; f != nil {
		r.FunctionCall = &rollout.FunctionCallRecord{Name: f.Name, Arguments: f.Arguments}
	}
	return r, nil
}

// toolCallErrorRecord returns the record of a turn's tool call format
// error; nil stays nil.
func toolCallErrorRecord(e *llm.FormatError) *rollout.ToolCallErrorRecord {
	if e == nil {
		return nil
	}
	return &rollout.ToolCallErrorRecord{Index: e.Index, Raw: e.Raw, Reason: e.Reason}
}

// abortRecord returns the record of a turn's abort; nil stays nil.
func abortRecord(a *llm.Abort) *rollout.AbortRecord {
	if a == nil {
		return nil
	}
	return &rollout.AbortRecord{By: a.By, Reason: a.Reason}
}

// usageRecord returns the record of a call's token usage.
func usageRecord(u openai.Usage) rollout.UsageRecord {
	r := rollout.UsageRecord{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if d := u.PromptTokensDetails; d != nil {
		r.PromptTokensDetails = &rollout.PromptTokensDetailsRecord{AudioTokens: d.AudioTokens, CachedTokens: d.CachedTokens}
	}
	if d := u.CompletionTokensDetails; d != nil {
		r.CompletionTokensDetails = &rollout.CompletionTokensDetailsRecord{AudioTokens: d.AudioTokens,
			ReasoningTokens: d.ReasoningTokens, AcceptedPredictionTokens: d.AcceptedPredictionTokens,
			RejectedPredictionTokens: d.RejectedPredictionTokens}
	}
	return r
}

// samplingRecord is a turn's own sampling settings as rollouts.jsonl
// records them (nil when it sampled as its role).
func samplingRecord(s *llm.Sampling) *rollout.SamplingRecord {
	if s == nil {
		return nil
	}
	return &rollout.SamplingRecord{Temperature: s.Temperature, TopP: s.TopP, TopK: s.TopK, MinP: s.MinP,
		RepetitionPenalty: s.RepetitionPenalty, PresencePenalty: s.PresencePenalty, FrequencyPenalty: s.FrequencyPenalty,
		MaxTokens: s.MaxTokens, Stop: s.Stop, ChatTemplateKwargs: s.ChatTemplateKwargs}
}
