package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/rollout"
)

// tree ends s and builds its rollout tree from the trajectories the
// gateway saw and the agent's outcome o.
func (g *Gateway) tree(s *session, o outcome) *agents.Rollout {
	roles := s.take()
	main, role := RolePlanner, agents.RolePlanner
	if len(g.roles) == 1 {
		main, role = RoleAgent, agents.RoleSingle
	}
	own, foreign := splitForeign(roles[main])
	p := merged(own, role, s.question, s.started)
	tree := &agents.Rollout{Question: s.question, Planner: p, Started: s.started, Duration: time.Since(s.started),
		Foreign: foreignRecords(foreign, role)}
	for i, t := range roles[RoleExecutor] {
		e := convert(t, agents.RoleExecutor, i, t.task())
		if r, ok := o.res.Reports[t.name]; ok && t.name != "" {
			e.Final = strings.TrimSpace(r)
		}
		judgeReport(e)
		tree.Executors = append(tree.Executors, e)
	}
	linkDelegations(p, roles[RoleExecutor])
	tree.Unmatched = unmatchedExecutors(p, roles[RoleExecutor])
	g.noteMisuse(s, len(foreign), len(tree.Unmatched))
	if engine := engineFailure(p, tree.Executors); engine != nil {
		// A model call failed at the engine: the rollout says nothing
		// about the policy, whatever the agent did afterwards (answered
		// anyway, relayed the failure as its own error, gave up).
		if p.Error == "" || p.FailureKind != failure.KindInfra {
			p.Error, p.FailureKind, p.FailureCause = engine.Error, engine.FailureKind, engine.FailureCause
		}
		p.FormatOK = false
		return tree
	}
	if o.err == nil && len(p.Turns) == 0 {
		o.err = fmt.Errorf("the agent never called the %s base URL", main)
	}
	if o.err != nil {
		// The agent service failed: whatever the trajectories hold says
		// nothing about the policy.
		p.Error = "agent service: " + o.err.Error()
		p.FailureKind, p.FailureCause = failure.KindInfra, FailureCause
		p.FormatOK = false
		return tree
	}
	answer := strings.TrimSpace(*o.res.Answer)
	if inner, ok := lastAnswerTag(answer); ok {
		answer = inner
	}
	tree.Answer, p.Answer = answer, answer
	if o.res.FormatOK != nil {
		p.FormatOK = *o.res.FormatOK && p.Error == ""
		if !*o.res.FormatOK {
			p.FormatErrors = append(p.FormatErrors, "the agent judged its format invalid (format_ok false)")
		}
		return tree
	}
	judgeTurns(p)
	if answer == "" {
		p.FormatErrors = append(p.FormatErrors, "the agent's answer is empty")
	}
	p.FormatOK = p.Error == "" && len(p.FormatErrors) == 0
	return tree
}

// merged is the role's trajectories as one: their turns in the order the
// conversations started. A planner that ran several conversations is one
// trajectory whose samples split where a conversation does not extend the
// previous one (a drift event, as when a chat template breaks a prefix).
func merged(ts []*trajectory, role, task string, started time.Time) *agents.Trajectory {
	out := &agents.Trajectory{Role: role, Task: task, Started: started}
	for i, t := range ts {
		c := convert(t, role, 0, task)
		base := len(out.Turns)
		if base > 0 && len(c.Turns) > 0 {
			// The role's next conversation: its history is not the one
			// the model saw, so its turns start a new sequence.
			out.Splits = append(out.Splits, agents.Split{Turn: base, Reason: rollout.SplitHistoryEdit, Message: 0,
				Detail: fmt.Sprintf("conversation %d of the role: its first request continues no earlier conversation", i+1)})
		}
		for _, sp := range c.Splits {
			sp.Turn += base
			out.Splits = append(out.Splits, sp)
		}
		out.Turns = append(out.Turns, c.Turns...)
		out.Steps = append(out.Steps, c.Steps...)
		if out.Error == "" {
			out.Error, out.FailureKind, out.FailureCause = c.Error, c.FailureKind, c.FailureCause
			if c.FailureTurn != nil {
				// The merged trajectory's turn: after those of the
				// conversations before.
				turn := base + *c.FailureTurn
				out.FailureTurn = &turn
			}
		}
		if i == len(ts)-1 {
			out.Final = c.Final
		}
		out.Duration = max(out.Duration, t.last.Sub(started))
	}
	return out
}

// convert is t as the farm's trajectory record: its turns, each turn's tool
// calls with the observations the agent sent back, the last answer's text
// as Final. Format validity is left to the caller.
func convert(t *trajectory, role string, index int, task string) *agents.Trajectory {
	out := &agents.Trajectory{Role: role, Index: index, Task: task, Turns: t.turns, Splits: t.splits, Started: t.start, Duration: t.last.Sub(t.start)}
	out.Steps = make([]agents.Step, len(t.turns))
	for i, turn := range t.turns {
		var step agents.Step
		if fe := turn.ToolCallError; fe != nil {
			step.FormatError, step.FormatRaw = fe.Reason, fe.Raw
		}
		if i < len(t.steps) {
			for _, tc := range t.steps[i] {
				step.Calls = append(step.Calls, agents.CallRecord{ID: tc.ID, Name: tc.Function.Name,
					Arguments: rawArguments(tc.Function.Arguments), Observation: t.obs[tc.ID], Executor: -1})
			}
		}
		out.Steps[i] = step
	}
	if n := len(t.turns); n > 0 {
		out.Final = stripReasoning(t.turns[n-1].Message.Content)
	}
	if t.errMsg != "" {
		out.Error = t.errMsg
		turn := t.errTurn
		out.FailureTurn = &turn
		out.FailureKind, out.FailureCause = t.errFault.kind(), t.errFault.cause
	}
	return out
}

// linkDelegations points each planner tool call an executor trajectory
// named (DelegationHeader) at that executor, as the built-in planner's
// delegate calls do (CallRecord.Executor), so that rollouts.jsonl and the
// viewer show which call ran which executor. A call is linked to the first
// executor that named it; a name that matches no call of the planner is
// left unlinked.
func linkDelegations(p *agents.Trajectory, executors []*trajectory) {
	type pos struct{ step, call int }
	calls := map[string][]pos{}
	for i, st := range p.Steps {
		for j, c := range st.Calls {
			if c.ID != "" {
				calls[c.ID] = append(calls[c.ID], pos{i, j})
			}
		}
	}
	for index, t := range executors {
		for _, at := range calls[t.delegation] {
			if c := &p.Steps[at.step].Calls[at.call]; c.Executor < 0 {
				c.Executor = index
				break
			}
		}
	}
}

// judgeReport sets an executor's format validity: it ended with a report
// (a final message without tool calls and with text), and every tool call
// parsed.
func judgeReport(e *agents.Trajectory) {
	judgeTurns(e)
	if n := len(e.Turns); n > 0 && len(e.Turns[n-1].ToolCalls) > 0 {
		e.FormatErrors = append(e.FormatErrors, "the trajectory ended on tool calls, without a report")
	} else if e.Final == "" {
		e.FormatErrors = append(e.FormatErrors, "the trajectory has no report")
	}
	e.FormatOK = e.Error == "" && len(e.FormatErrors) == 0
}

// judgeTurns records the format errors the turns show: tool calls that did
// not parse, a last message cut by the token limit.
func judgeTurns(tr *agents.Trajectory) {
	for i, t := range tr.Turns {
		if t.ToolCallError != nil {
			tr.FormatErrors = append(tr.FormatErrors, fmt.Sprintf("turn %d: %s", i, t.ToolCallError.Reason))
		}
	}
	if n := len(tr.Turns); n > 0 && tr.Turns[n-1].FinishReason == "length" {
		tr.FormatErrors = append(tr.FormatErrors, fmt.Sprintf("turn %d: final message cut off by the token limit", n-1))
	}
}

// rawArguments keeps a call's arguments as JSON: as they are when they
// parse, else as a JSON string of their text.
func rawArguments(args string) json.RawMessage {
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	q, _ := json.Marshal(args)
	return q
}

// firstUser is the first user message's text (an executor's task).
func firstUser(msgs []openai.ChatCompletionMessage) string {
	for _, m := range msgs {
		if m.Role == openai.ChatMessageRoleUser {
			return m.Content
		}
	}
	return ""
}

// lastAnswerTag returns the text of the last <answer>…</answer> block.
func lastAnswerTag(s string) (string, bool) {
	i := strings.LastIndex(s, "<answer>")
	if i < 0 {
		return "", false
	}
	rest := s[i+len("<answer>"):]
	j := strings.Index(rest, "</answer>")
	if j < 0 {
		return "", false
	}
	return strings.TrimSpace(rest[:j]), true
}

// stripReasoning removes a leading <think>…</think> block and surrounding
// whitespace.
func stripReasoning(content string) string {
	if rest, ok := strings.CutPrefix(strings.TrimSpace(content), "<think>"); ok {
		if _, after, found := strings.Cut(rest, "</think>"); found {
			return strings.TrimSpace(after)
		}
	}
	return strings.TrimSpace(content)
}
