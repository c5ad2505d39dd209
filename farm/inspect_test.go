package farm

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/tools"
)

// strippedFields are the fields of the runtime tree that rollouts.jsonl
// leaves out or writes as zero (see inspectionRecord).
var strippedFields = map[string]bool{
	"Rollout.Started": true, "Rollout.Duration": true,
	"Trajectory.Started": true, "Trajectory.Duration": true, "Trajectory.FailureEndpoint": true,
	"Turn.PromptIDs": true, "Turn.CompletionIDs": true, "Turn.Logprobs": true,
	"Turn.Endpoint": true, "Turn.Latency": true, "Turn.Attempts": true, "Turn.ReusedPromptTokens": true,
	// A turn's own sampling never holds its seed (llm.Sampling.overridden).
	"Sampling.Seed": true,
	"Meta.Latency":  true, "Meta.CacheHit": true, "Meta.CacheHits": true, "Meta.SharedHits": true, "Meta.Upstream": true,
}

// fullTree returns a tree in which every field the record keeps is set
// somewhere and every stripped field is zero, with the tool call ids
// already numbered as inspectionRecord numbers them.
func fullTree() *agents.Rollout {
	idx := 0
	temp, topP, topK, minP, rep, pres, freq := 0.6, 0.9, 20, 0.05, 1.1, 0.2, 0.3
	calls := []openai.ToolCall{{Index: &idx, ID: "call-0-0", Type: openai.ToolTypeFunction,
		Function: openai.FunctionCall{Name: "search", Arguments: `{"query":["a <b> & c"]}`}}}
	planner := &agents.Trajectory{Role: agents.RolePlanner, Task: "q?", Final: "<answer>x</answer>", Answer: "x",
		FormatOK: true, FormatErrors: []string{"one", "two"}, Error: "turn 2: cut", FailureKind: failure.KindInfra, FailureCause: "stream_cut", FailureTurn: new(2), AnswerNow: true,
		Splits: []agents.Split{{Turn: 1, Reason: "history_edit", Message: 2, Detail: "message 2 (tool) the model saw was removed or replaced"}},
		Turns: []*llm.Turn{
			{Message: openai.ChatCompletionMessage{Role: "assistant", Content: "calling", Refusal: "no", Name: "bot",
				ReasoningContent: "think", FunctionCall: &openai.FunctionCall{Name: "f", Arguments: "{}"}, ToolCalls: calls, ToolCallID: "t"},
				ToolCalls: calls, ToolCallError: &llm.FormatError{Index: -1, Raw: "<tool_call>", Reason: "bad"},
				FinishReason: "tool_calls", StopReason: "</tool_call>", WeightVersion: "7",
				Sampling: &llm.Sampling{Temperature: &temp, TopP: &topP, TopK: &topK, MinP: &minP, RepetitionPenalty: &rep,
					PresencePenalty: &pres, FrequencyPenalty: &freq, MaxTokens: 64, Stop: []string{"</x>"},
					ChatTemplateKwargs: map[string]any{"enable_thinking": false}},
				Usage: openai.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15,
					PromptTokensDetails:     &openai.PromptTokensDetails{AudioTokens: 1, CachedTokens: 4},
					CompletionTokensDetails: &openai.CompletionTokensDetails{AudioTokens: 1, ReasoningTokens: 2, AcceptedPredictionTokens: 3, RejectedPredictionTokens: 4}}},
			nil,
			{Message: openai.ChatCompletionMessage{Role: "assistant",
				MultiContent: []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: "part"}}},
				FinishReason: "abort", Abort: &llm.Abort{By: llm.AbortedByServer, Reason: "weight update"}},
		},
		Steps: []agents.Step{
			{Calls: []agents.CallRecord{{ID: "call-0-0", Name: "search", Arguments: json.RawMessage(`{"query": ["a"]}`),
				Observation: "found <it> & more", Executor: -1,
				Meta: tools.Meta{Tool: "search", Provider: "serper", Requests: 2, Bytes: 17, Class: failure.ClassTimeout, Partial: true, Error: "timeout"}}},
				FormatError: "bad block", FormatRaw: "<tool_call>"},
			{},
			{Calls: []agents.CallRecord{{ID: "unmatched", Name: "delegate", Executor: 1}}},
		},
	}
	exec := &agents.Trajectory{Role: agents.RoleExecutor, Index: 1, Task: "sub", Turns: []*llm.Turn{}, Steps: []agents.Step{}}
	foreign := &agents.Trajectory{Role: agents.RolePlanner, Task: "another question", Turns: []*llm.Turn{}, Steps: []agents.Step{}, FormatErrors: []string{"foreign: a second planner conversation"}}
	return &agents.Rollout{Question: "q?", Answer: "x", Planner: planner, Executors: []*agents.Trajectory{nil, exec},
		Foreign: []*agents.Trajectory{foreign}, Unmatched: []int{1}}
}

// TestTreeRecordEncodesAsTheRuntimeTree checks that the record of a tree
// with nothing to strip encodes to the bytes the runtime tree itself
// encodes to, so rollouts.jsonl keeps its keys, order and formatting; and
// that the fixture sets every field of the runtime tree, so a field added
// there fails here until the record carries it.
func TestTreeRecordEncodesAsTheRuntimeTree(t *testing.T) {
	tree := fullTree()
	want, err := json.Marshal(tree)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := treeRecord(tree)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("record encodes as\n%s\nwant\n%s", got, want)
	}
	var back rollout.TreeRecord
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if again, _ := json.Marshal(&back); string(again) != string(got) {
		t.Errorf("decoded record encodes as\n%s\nwant\n%s", again, got)
	}

	set := map[string]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				return
			}
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Struct:
			ty := v.Type()
			if ty.PkgPath() == "time" {
				return
			}
			for i := range ty.NumField() {
				f := ty.Field(i)
				if !f.IsExported() {
					continue
				}
				name := ty.Name() + "." + f.Name
				if !v.Field(i).IsZero() {
					set[name] = true
				}
				if f.Name != "MultiContent" {
					walk(v.Field(i))
				}
			}
		}
	}
	walk(reflect.ValueOf(tree))
	for _, ty := range []reflect.Type{reflect.TypeFor[agents.Rollout](), reflect.TypeFor[agents.Trajectory](), reflect.TypeFor[llm.Turn](),
		reflect.TypeFor[openai.ChatCompletionMessage](), reflect.TypeFor[openai.ToolCall](), reflect.TypeFor[openai.FunctionCall](),
		reflect.TypeFor[llm.FormatError](), reflect.TypeFor[llm.Abort](), reflect.TypeFor[llm.Sampling](), reflect.TypeFor[openai.Usage](),
		reflect.TypeFor[openai.PromptTokensDetails](), reflect.TypeFor[openai.CompletionTokensDetails](),
		reflect.TypeFor[agents.Step](), reflect.TypeFor[agents.CallRecord](), reflect.TypeFor[tools.Meta](), reflect.TypeFor[agents.Split]()} {
		for i := range ty.NumField() {
			f := ty.Field(i)
			name := ty.Name() + "." + f.Name
			switch {
			case !f.IsExported():
			case strippedFields[name] && set[name]:
				t.Errorf("fixture sets %s, which the record leaves out", name)
			case !strippedFields[name] && !set[name]:
				t.Errorf("fixture leaves %s zero: set it, and carry it in the record types of package rollout", name)
			}
		}
	}
}

// TestInspectionRecordStrips checks that the record leaves out timing,
// routing, token and cache data and renumbers the servers' tool call ids.
func TestInspectionRecordStrips(t *testing.T) {
	calls := []openai.ToolCall{{ID: "chatcmpl-tool-x1", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "search"}},
		{ID: "chatcmpl-tool-x2", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "visit"}}}
	started := time.Unix(1700000000, 0)
	tr := &agents.Trajectory{Role: agents.RolePlanner, Started: started, Duration: time.Second,
		Turns: []*llm.Turn{{}, {Message: openai.ChatCompletionMessage{Role: "assistant", ToolCalls: calls}, ToolCalls: calls,
			PromptIDs: []int32{1, 2}, CompletionIDs: []int32{3}, Logprobs: []float64{-0.5},
			Endpoint: "http://gpu-1:8000", Latency: time.Second, Attempts: 2, FinishReason: "tool_calls"}},
		Steps: []agents.Step{{}, {Calls: []agents.CallRecord{
			{ID: "chatcmpl-tool-x2", Name: "visit", Meta: tools.Meta{Tool: "visit", Latency: time.Second, CacheHit: true, CacheHits: 1, SharedHits: 1, Upstream: 3}},
			{ID: "chatcmpl-tool-x1", Name: "search"}}}}}
	res := &RolloutResult{Task: rollout.RolloutTask{Run: "r", Step: 1, QueryID: "q", K: 0},
		Tree: &agents.Rollout{Planner: tr, Executors: []*agents.Trajectory{}, Started: started, Duration: time.Minute}}
	line, err := inspectionRecord(Task{ID: "q", Question: "q?", Answer: "a"}, res)
	if err != nil {
		t.Fatal(err)
	}
	s := string(line)
	for _, gone := range []string{"chatcmpl", "gpu-1", "prompt_ids", "completion_ids", "logprobs", "attempts", "2023-", `"cache_hit":true`, `"upstream":3`, "shared_hits", "failure_turn"} {
		if strings.Contains(s, gone) {
			t.Errorf("record holds %q: %s", gone, s)
		}
	}
	var rec rollout.RolloutRecord
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Fatal(err)
	}
	p := rec.Tree.Planner
	if got := p.Turns[1].ToolCalls[1].ID; got != "call-1-1" {
		t.Errorf("second call of turn 1 is %q, want call-1-1", got)
	}
	if got, want := []string{p.Steps[1].Calls[0].ID, p.Steps[1].Calls[1].ID}, []string{"call-1-1", "call-1-0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("call ids %q, want %q", got, want)
	}
	if !p.Started.IsZero() || p.Duration != 0 || !rec.Tree.Started.IsZero() || rec.Tree.Duration != 0 || p.Steps[1].Calls[0].Meta.Latency != 0 {
		t.Errorf("record keeps timing: %s", s)
	}
	if rec.ID != "r/1/q/0" || rec.Question != "q?" || rec.GoldAnswer != "a" {
		t.Errorf("record %+v, want id r/1/q/0, question q? and gold answer a", rec)
	}
}
