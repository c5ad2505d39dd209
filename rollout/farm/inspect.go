package farm

import (
	"encoding/json"
	"fmt"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/agents/llm"
	"github.com/mgrpo/mgrpo/rollout"
)

// RolloutRecord is one line of rollouts.jsonl: a rollout tree with its
// question, gold answer, scores and errors, for inspection (the trajectory
// viewer reads it). Readers should ignore keys they do not know, so that
// files of older and newer farms stay readable.
type RolloutRecord struct {
	ID   string              `json:"id"`
	Task rollout.RolloutTask `json:"task"`
	// Question and GoldAnswer are the task's, so a line can be read without
	// the task file.
	Question   string        `json:"question"`
	GoldAnswer string        `json:"gold_answer"`
	Error      string        `json:"error,omitempty"`
	Scores     RolloutScores `json:"scores"`
	// Drifts and SequenceErrors summarise the sequence assembly of the
	// planner (first) and each executor.
	Drifts         []int           `json:"drifts"`
	SequenceErrors []string        `json:"sequence_errors,omitempty"`
	Tree           *agents.Rollout `json:"tree"`
}

// inspectionRecord returns the rollouts.jsonl line of r. Step files must be
// a pure function of the run's inputs, so the tree is copied without what
// depends on timing or on the order in which concurrent rollouts ran:
// start times, durations and latencies, the serving endpoint and its
// attempt count, tool cache hits, and the tool call ids servers generate at
// random (vLLM does), which are renumbered "call-T-I" for call I of turn T
// wherever they appear. Token ids and logprobs are left out
// too: the samples hold them, and the per-turn prompt ids would make the
// file quadratic in the conversation length. Messages, tool calls,
// observations, answers, errors, finish reasons and usage stay.
func inspectionRecord(t Task, r *RolloutResult) ([]byte, error) {
	rec := RolloutRecord{ID: r.Task.ID(), Task: r.Task, Question: t.Question, GoldAnswer: t.Answer, Error: r.Error,
		Scores: r.Scores, Tree: inspectionTree(r.Tree)}
	rec.Drifts = append(rec.Drifts, r.Planner.Drifts)
	errs := []string{r.Planner.SequenceError}
	failed := r.Planner.SequenceError != ""
	for _, e := range r.Executors {
		rec.Drifts = append(rec.Drifts, e.Drifts)
		errs = append(errs, e.SequenceError)
		failed = failed || e.SequenceError != ""
	}
	if failed {
		rec.SequenceErrors = errs
	}
	return json.Marshal(rec)
}

// inspectionTree returns a copy of t without timing, routing and token data.
func inspectionTree(t *agents.Rollout) *agents.Rollout {
	c := *t
	c.Started, c.Duration = time.Time{}, 0
	c.Planner = inspectionTrajectory(t.Planner)
	c.Executors = make([]*agents.Trajectory, len(t.Executors))
	for i, e := range t.Executors {
		c.Executors[i] = inspectionTrajectory(e)
	}
	return &c
}

// inspectionTrajectory returns a copy of tr without timing, routing and
// token data; nil stays nil.
func inspectionTrajectory(tr *agents.Trajectory) *agents.Trajectory {
	if tr == nil {
		return nil
	}
	c := *tr
	c.Started, c.Duration = time.Time{}, 0
	ids := map[string]string{}
	renumber := func(calls []openai.ToolCall, turn int) []openai.ToolCall {
		if calls == nil {
			return nil
		}
		out := make([]openai.ToolCall, len(calls))
		for j, call := range calls {
			id, ok := ids[call.ID]
			if !ok {
				id = fmt.Sprintf("call-%d-%d", turn, j)
				ids[call.ID] = id
			}
			call.ID = id
			out[j] = call
		}
		return out
	}
	c.Turns = make([]*llm.Turn, len(tr.Turns))
	for i, turn := range tr.Turns {
		if turn == nil {
			continue
		}
		tc := *turn
		tc.PromptIDs, tc.CompletionIDs, tc.Logprobs = nil, nil, nil
		tc.Endpoint, tc.Latency, tc.Attempts = "", 0, 0
		tc.Message.ToolCalls = renumber(turn.Message.ToolCalls, i)
		tc.ToolCalls = renumber(turn.ToolCalls, i)
		c.Turns[i] = &tc
	}
	c.Steps = make([]agents.Step, len(tr.Steps))
	for i, s := range tr.Steps {
		sc := s
		sc.Calls = make([]agents.CallRecord, len(s.Calls))
		for j, call := range s.Calls {
			call.Meta.Latency = 0
			call.Meta.CacheHit, call.Meta.CacheHits, call.Meta.SharedHits, call.Meta.Upstream = false, 0, 0, 0
			if id, ok := ids[call.ID]; ok {
				call.ID = id
			}
			sc.Calls[j] = call
		}
		c.Steps[i] = sc
	}
	return &c
}
