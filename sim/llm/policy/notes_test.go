package policy

import (
	"strings"
	"testing"
)

// TestExecutorLooksUpNotes checks the executor's habit with the sim MCP
// server's notes tool: offered it (plain or prefixed), it looks the entity
// up once before searching, then goes on as without it, reading the facts
// the notes gave.
func TestExecutorLooksUpNotes(t *testing.T) {
	for _, name := range []string{ToolNotes, "sim_" + ToolNotes} {
		t.Run(name, func(t *testing.T) {
			offered := append([]Tool{{Name: name}}, executorTools...)
			p := New(PerfectSkills())
			out := p.Act(greedy(offered, user(oneHopTask)))
			if len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != name || !strings.Contains(out.ToolCalls[0].Arguments, `"entity":"Velmora Labs"`) {
				t.Fatalf("first turn = %+v, want a %s call about Velmora Labs", out.ToolCalls, name)
			}
			if len(out.Decisions) != 0 {
				t.Errorf("the lookup made decisions %v: it must be a habit, not a choice", out.Decisions)
			}
			lookup := out.ToolCalls[0]
			// Notes without the fact: the executor searches next, once.
			out = p.Act(greedy(offered, user(oneHopTask), assistantCalls(lookup), toolMsg(name, "No notes about Velmora Labs.")))
			if len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != ToolSearch {
				t.Fatalf("after empty notes = %+v, want a search", out.ToolCalls)
			}
			// Notes with the fact: the executor reports it.
			out = p.Act(greedy(offered, user(oneHopTask), assistantCalls(lookup),
				toolMsg(name, "Notes about Velmora Labs:\n- The founder of Velmora Labs is Ida Kestrel.")))
			if len(out.ToolCalls) != 0 || !strings.Contains(out.Content, "Ida Kestrel") {
				t.Errorf("after notes with the fact = %+v %q, want a report naming Ida Kestrel", out.ToolCalls, out.Content)
			}
		})
	}
	// Not offered: the first turn is the search it always was.
	if out := New(PerfectSkills()).Act(greedy(executorTools, user(oneHopTask))); len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != ToolSearch {
		t.Errorf("without notes = %+v, want a search", out.ToolCalls)
	}
}
