package policy

import (
	"strings"
	"testing"
)

const (
	oneHopTask = "Find the founder of Velmora Labs."
	searchList = "1. [Velmora Labs Group - Company](https://web.sim/velmora-labs-group)\nA holding company.\n" +
		"2. [Velmora Labs - Company](https://web.sim/velmora-labs)\nVelmora Labs is a firm in Orvane.\n" +
		"3. [Orvane](https://web.sim/orvane)\nA city.\n"
	realPage       = "Home | About\n## Velmora Labs\nVelmora Labs makes lenses. The founder of Velmora Labs is Ida Kestrel. Buy now!"
	distractorPage = "Home | About\n## Velmora Labs Group\nThe founder of Velmora Labs Group is Odo Marrin."
)

func TestExecutorTurns(t *testing.T) {
	perfect := PerfectSkills()
	sloppy := PerfectSkills()
	sloppy.Sloppiness = 1
	snippy := PerfectSkills()
	snippy.SnippetShortcut = 1
	cautious := PerfectSkills()
	cautious.SnippetShortcut = 0
	short := PerfectSkills()
	short.ExecutorTurns = 2

	search := mkCall(t, ToolSearch, map[string]any{"query": []string{"Velmora Labs founder"}})
	visitReal := mkCall(t, ToolVisit, map[string]any{"url": []string{"https://web.sim/velmora-labs"}, "goal": oneHopTask})
	visitFake := mkCall(t, ToolVisit, map[string]any{"url": []string{"https://web.sim/velmora-labs-group"}, "goal": oneHopTask})
	snippet := "1. [Velmora Labs](https://web.sim/velmora-labs)\nThe founder of Velmora Labs is Ida Kestrel.\n"

	tests := []struct {
		name     string
		skills   Skills
		msgs     []Message
		wantCall string // tool name, or "" for a report
		wantArg  string // a string the call's arguments must contain
		wantText string // the report when wantCall is ""
	}{
		{
			name:     "searches first",
			skills:   perfect,
			msgs:     []Message{user(oneHopTask)},
			wantCall: ToolSearch,
			wantArg:  "Velmora Labs founder",
		},
		{
			name:     "visits the most relevant result",
			skills:   perfect,
			msgs:     []Message{user(oneHopTask), assistantCalls(search), toolMsg(ToolSearch, searchList)},
			wantCall: ToolVisit,
			wantArg:  "https://web.sim/velmora-labs\"",
		},
		{
			name:   "reports the fact found on the page",
			skills: perfect,
			msgs: []Message{user(oneHopTask), assistantCalls(search), toolMsg(ToolSearch, searchList),
				assistantCalls(visitReal), toolMsg(ToolVisit, realPage)},
			wantText: "The founder of Velmora Labs is Ida Kestrel.",
		},
		{
			name:   "a careful reader rejects the distractor and reads on",
			skills: perfect,
			msgs: []Message{user(oneHopTask), assistantCalls(search), toolMsg(ToolSearch, searchList),
				assistantCalls(visitFake), toolMsg(ToolVisit, distractorPage)},
			wantCall: ToolVisit,
			wantArg:  "https://web.sim/velmora-labs\"",
		},
		{
			name:   "a sloppy reader takes the distractor's fact",
			skills: sloppy,
			msgs: []Message{user(oneHopTask), assistantCalls(search), toolMsg(ToolSearch, searchList),
				assistantCalls(visitFake), toolMsg(ToolVisit, distractorPage)},
			wantText: "The founder of Velmora Labs is Odo Marrin.",
		},
		{
			name:     "uses a snippet that states the fact",
			skills:   snippy,
			msgs:     []Message{user(oneHopTask), assistantCalls(search), toolMsg(ToolSearch, snippet)},
			wantText: "The founder of Velmora Labs is Ida Kestrel.",
		},
		{
			name:     "a cautious reader visits the page behind the snippet",
			skills:   cautious,
			msgs:     []Message{user(oneHopTask), assistantCalls(search), toolMsg(ToolSearch, snippet)},
			wantCall: ToolVisit,
			wantArg:  "https://web.sim/velmora-labs",
		},
		{
			name:     "reports a miss when out of turns",
			skills:   short,
			msgs:     []Message{user(oneHopTask), assistantCalls(search), toolMsg(ToolSearch, "no results")},
			wantText: "I could not find the founder of Velmora Labs.",
		},
		{
			name:   "multi-hop task reports every fact, the final one last",
			skills: perfect,
			msgs: []Message{user("Find the birth city of the founder of Velmora Labs."), assistantCalls(visitReal),
				toolMsg(ToolVisit, realPage+" The birth city of Ida Kestrel is Orvane.")},
			wantText: "The founder of Velmora Labs is Ida Kestrel.\nThe birth city of Ida Kestrel is Orvane.",
		},
		{
			name:   "single-agent baseline adds an answer tag",
			skills: perfect,
			msgs: []Message{system("Reply with <answer>…</answer>."), user("What is the founder of Velmora Labs?"),
				assistantCalls(visitReal), toolMsg(ToolVisit, realPage)},
			wantText: "The founder of Velmora Labs is Ida Kestrel.\n\n<answer>Ida Kestrel</answer>",
		},
		{
			name:   "searches the next hop from the new entity",
			skills: perfect,
			msgs: []Message{user("Find the birth city of the founder of Velmora Labs."), assistantCalls(visitReal),
				toolMsg(ToolVisit, realPage)},
			wantCall: ToolSearch,
			wantArg:  "Ida Kestrel birth city",
		},
		{
			name:     "no task",
			skills:   perfect,
			msgs:     []Message{user("hi")},
			wantText: "I do not know what to look for.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := New(tt.skills).Act(greedy(executorTools, tt.msgs...))
			if tt.wantCall == "" {
				if len(out.ToolCalls) != 0 {
					t.Fatalf("calls = %v, want a report", out.ToolCalls)
				}
				if out.Content != tt.wantText {
					t.Errorf("content = %q, want %q", out.Content, tt.wantText)
				}
				return
			}
			if len(out.ToolCalls) != 1 {
				t.Fatalf("got %d calls (content %q), want 1 %s call", len(out.ToolCalls), out.Content, tt.wantCall)
			}
			tc := out.ToolCalls[0]
			argsOf(t, tc)
			if tc.Name != tt.wantCall || !strings.Contains(tc.Arguments, tt.wantArg) {
				t.Errorf("call = %s %s, want %s containing %q", tc.Name, tc.Arguments, tt.wantCall, tt.wantArg)
			}
		})
	}
}

func TestAnswerWithoutTools(t *testing.T) {
	tests := []struct {
		name string
		msgs []Message
		want string
	}{
		{"facts in the prompt", []Message{user("The founder of Velmora Labs is Ida Kestrel. What is the founder of Velmora Labs?")},
			"The founder of Velmora Labs is Ida Kestrel."},
		{"answer tag asked", []Message{system("Answer in <answer></answer>."),
			user("Context: The founder of Velmora Labs is Ida Kestrel. What is the founder of Velmora Labs?")},
			"<answer>Ida Kestrel</answer>"},
		{"nothing known", []Message{user(twoHop)}, "I do not know."},
		{"no question", []Message{user("hello")}, "I do not know."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := New(PerfectSkills()).Act(greedy(nil, tt.msgs...)).Content
			if got != tt.want {
				t.Errorf("content = %q, want %q", got, tt.want)
			}
		})
	}
}
