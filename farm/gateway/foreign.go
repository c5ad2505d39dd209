package gateway

import (
	"encoding/json"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/agents"
)

// A rollout has exactly one planner trajectory (the single agent's in a
// one-role run). A call under its planner URL that neither starts it, nor
// continues it, nor is a recorded history edit of it (historyedit.go) is
// foreign: most likely an agent service that shares one client, and so one
// base URL, across the rollouts it serves or across roles. Foreign calls are
// answered (the agent is not broken by a refusal it cannot explain) and kept
// in the tree flagged, but never reach a sample: they are not this
// rollout's policy.

// Reasons a planner trajectory is foreign.
const (
	foreignSecond  = "a second planner conversation: its first request neither continues the rollout's planner trajectory nor edits its history"
	foreignNoTask  = "the first planner request does not contain the rollout's task"
	foreignWarning = "gateway: calls under a rollout's URLs that are not its own (foreign planner calls, never trained, or executor trajectories matching no delegation of its planner); the likely cause is an agent service sharing one client or base URL across rollouts or roles — build one client per rollout from the offered base URLs"
)

// mainRole reports whether role is the one whose trajectory is the
// rollout's (the planner, or the single agent).
func mainRole(role string) bool { return role == RolePlanner || role == RoleAgent }

// classifyForeign sets t.foreign when t is a new trajectory of the main
// role that cannot be the rollout's (s.mu held): another trajectory of the
// role already began, or its messages lack the rollout's task. It reports
// whether t is foreign.
func (s *session) classifyForeign(t *trajectory, msgs []openai.ChatCompletionMessage) bool {
	if !mainRole(t.role) || t.foreign != "" {
		return t.foreign != ""
	}
	if len(t.turns) > 0 || len(t.msgs) > 0 || t.errMsg != "" {
		return false // the trajectory had a call: it was classified then
	}
	for _, o := range s.roles[t.role] {
		if o != t && o.foreign == "" {
			t.foreign = foreignSecond
			return true
		}
	}
	if !containsTask(msgs, s.question) {
		t.foreign = foreignNoTask
		return true
	}
	return false
}

// containsTask reports whether a message of msgs holds the task's text
// (whitespace runs compared as one space, so wrapping does not matter). An
// empty task is held by any request.
func containsTask(msgs []openai.ChatCompletionMessage, task string) bool {
	want := squash(task)
	if want == "" {
		return true
	}
	for _, m := range msgs {
		if strings.Contains(squash(m.Content), want) {
			return true
		}
		for _, part := range m.MultiContent {
			if strings.Contains(squash(part.Text), want) {
				return true
			}
		}
	}
	return false
}

func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// splitForeign separates the main role's foreign trajectories from the
// rollout's own.
func splitForeign(ts []*trajectory) (own, foreign []*trajectory) {
	for _, t := range ts {
		if t.foreign != "" {
			foreign = append(foreign, t)
		} else {
			own = append(own, t)
		}
	}
	return own, foreign
}

// foreignRecords are the foreign trajectories as records: their turns,
// their reason as an error, never format-valid (so nothing samples them).
func foreignRecords(ts []*trajectory, role string) []*agents.Trajectory {
	var out []*agents.Trajectory
	for i, t := range ts {
		r := convert(t, role, i, firstUser(t.msgs))
		r.FormatOK = false
		r.FormatErrors = append(r.FormatErrors, "foreign: "+t.foreign)
		out = append(out, r)
	}
	return out
}

// unmatchedExecutors returns the executors (indices) that no delegation
// of the planner names: neither a planner tool call whose id their
// DelegationHeader gave, nor one whose arguments hold their task.
func unmatchedExecutors(p *agents.Trajectory, executors []*trajectory) []int {
	ids := map[string]bool{}
	var args []string
	for _, st := range p.Steps {
		for _, c := range st.Calls {
			if c.ID != "" {
				ids[c.ID] = true
			}
			args = append(args, squash(argumentText(c.Arguments)))
		}
	}
	var out []int
	for i, t := range executors {
		if t.delegation != "" && ids[t.delegation] {
			continue
		}
		task := squash(t.task())
		matched := false
		for _, a := range args {
			if task != "" && strings.Contains(a, task) {
				matched = true
				break
			}
		}
		if !matched {
			out = append(out, i)
		}
	}
	return out
}

// argumentText is a tool call's arguments with JSON string escapes
// undone, so a task with quotes or newlines is found in them.
func argumentText(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x)
			b.WriteByte(' ')
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

// noteMisuse counts a rollout's foreign and unmatched trajectories and
// warns once per gateway, naming the likely cause.
func (g *Gateway) noteMisuse(s *session, foreign, unmatched int) {
	if foreign == 0 && unmatched == 0 {
		return
	}
	g.cfg.Metrics.misuse(foreign, unmatched)
	if g.misuseWarned.CompareAndSwap(false, true) {
		g.cfg.Logger.Warn(foreignWarning, "rollout", s.id, "foreign_trajectories", foreign, "unmatched_executors", unmatched)
	}
}
