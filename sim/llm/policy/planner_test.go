package policy

import (
	"strings"
	"testing"
)

const twoHop = "What is the birth city of the founder of Velmora Labs?"

func TestPlannerTurns(t *testing.T) {
	perfect := PerfectSkills()
	noRetry := PerfectSkills()
	noRetry.Retry = 0
	guesser := PerfectSkills()
	guesser.Guess = 1
	short := PerfectSkills()
	short.PlannerTurns = 2
	chainer := PerfectSkills()
	chainer.DelegateHop, chainer.DelegateChain = 0, 1
	crosser := PerfectSkills()
	crosser.DelegateHop, crosser.CrossCheck = 0, 1

	hop1 := mkCall(t, ToolDelegate, map[string]any{"task": "Find the founder of Velmora Labs."})
	tests := []struct {
		name      string
		skills    Skills
		msgs      []Message
		wantTasks []string // delegated tasks, in order; nil means an answer
		wantText  string   // the answer content when wantTasks is nil
	}{
		{
			name:      "first turn delegates the first hop",
			skills:    perfect,
			msgs:      []Message{user(twoHop)},
			wantTasks: []string{"Find the founder of Velmora Labs."},
		},
		{
			name:   "second turn delegates the next hop from the reported fact",
			skills: perfect,
			msgs: []Message{user(twoHop), assistantCalls(hop1),
				toolMsg(ToolDelegate, "The founder of Velmora Labs is Ida Kestrel.")},
			wantTasks: []string{"Find the birth city of Ida Kestrel."},
		},
		{
			name:   "answers once the chain resolves",
			skills: perfect,
			msgs: []Message{user(twoHop), assistantCalls(hop1),
				toolMsg(ToolDelegate, "The founder of Velmora Labs is Ida Kestrel.\nThe birth city of Ida Kestrel is Orvane.")},
			wantText: "<answer>Orvane</answer>",
		},
		{
			name:      "whole chain in one subtask",
			skills:    chainer,
			msgs:      []Message{user(twoHop)},
			wantTasks: []string{"Find the birth city of the founder of Velmora Labs."},
		},
		{
			name:      "same hop twice to cross-check",
			skills:    crosser,
			msgs:      []Message{user(twoHop)},
			wantTasks: []string{"Find the founder of Velmora Labs.", "Find the founder of Velmora Labs."},
		},
		{
			name:   "retries a missed hop",
			skills: perfect,
			msgs: []Message{user(twoHop), assistantCalls(hop1),
				toolMsg(ToolDelegate, "I could not find the founder of Velmora Labs.")},
			wantTasks: []string{"Find the founder of Velmora Labs."},
		},
		{
			name:   "gives up on a missed hop without retry skill",
			skills: noRetry,
			msgs: []Message{user(twoHop), assistantCalls(hop1),
				toolMsg(ToolDelegate, "I could not find the founder of Velmora Labs.")},
			wantText: "<answer>Velmora Labs</answer>",
		},
		{
			name:   "majority wins a contradiction",
			skills: perfect,
			msgs: []Message{user("What is the founder of Velmora Labs?"), assistantCalls(hop1, hop1, hop1),
				toolMsg(ToolDelegate, "The founder of Velmora Labs is Ida Kestrel."),
				toolMsg(ToolDelegate, "The founder of Velmora Labs is Odo Marrin."),
				toolMsg(ToolDelegate, "The founder of Velmora Labs is Odo Marrin.")},
			wantText: "<answer>Odo Marrin</answer>",
		},
		{
			name:   "first wins a tied contradiction",
			skills: perfect,
			msgs: []Message{user("What is the founder of Velmora Labs?"), assistantCalls(hop1, hop1),
				toolMsg(ToolDelegate, "The founder of Velmora Labs is Ida Kestrel."),
				toolMsg(ToolDelegate, "The founder of Velmora Labs is Odo Marrin.")},
			wantText: "<answer>Ida Kestrel</answer>",
		},
		{
			name:     "guesses without delegating",
			skills:   guesser,
			msgs:     []Message{user(twoHop)},
			wantText: "<answer>Velmora Labs</answer>",
		},
		{
			name:   "answers its best guess when out of turns",
			skills: short,
			msgs: []Message{user(twoHop), assistantCalls(hop1),
				toolMsg(ToolDelegate, "The founder of Velmora Labs is Ida Kestrel.")},
			wantText: "<answer>Ida Kestrel</answer>",
		},
		{
			name:     "no question in the prompt",
			skills:   perfect,
			msgs:     []Message{user("hello there")},
			wantText: "<answer>unknown</answer>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := New(tt.skills).Act(greedy(plannerTools, tt.msgs...))
			var got []string
			for _, tc := range out.ToolCalls {
				if tc.Name != ToolDelegate {
					t.Errorf("call name = %q, want %q", tc.Name, ToolDelegate)
				}
				task, _ := argsOf(t, tc)["task"].(string)
				got = append(got, task)
			}
			if strings.Join(got, "|") != strings.Join(tt.wantTasks, "|") {
				t.Errorf("delegated %q, want %q", got, tt.wantTasks)
			}
			if tt.wantTasks == nil && out.Content != tt.wantText {
				t.Errorf("content = %q, want %q", out.Content, tt.wantText)
			}
			if out.Reasoning == "" {
				t.Errorf("reasoning is empty")
			}
		})
	}
}
