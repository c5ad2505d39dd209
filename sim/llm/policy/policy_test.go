package policy

import (
	"math"
	"reflect"
	"sync"
	"testing"
)

// sampleConversations are turns of every role, used by the property tests.
func sampleConversations(tb testing.TB) map[string]Request {
	tb.Helper()
	hop1 := mkCall(tb, ToolDelegate, map[string]any{"task": "Find the founder of Velmora Labs."})
	search := mkCall(tb, ToolSearch, map[string]any{"query": []string{"Velmora Labs founder"}})
	return map[string]Request{
		"planner first turn":   {Messages: []Message{user(twoHop)}, Tools: plannerTools},
		"planner after report": {Messages: []Message{user(twoHop), assistantCalls(hop1), toolMsg(ToolDelegate, "The founder of Velmora Labs is Ida Kestrel.")}, Tools: plannerTools},
		"executor first turn":  {Messages: []Message{user(oneHopTask)}, Tools: executorTools},
		"executor results":     {Messages: []Message{user(oneHopTask), assistantCalls(search), toolMsg(ToolSearch, searchList)}, Tools: executorTools},
	}
}

func TestGreedyIsDeterministic(t *testing.T) {
	p := New(DefaultSkills())
	for name, req := range sampleConversations(t) {
		t.Run(name, func(t *testing.T) {
			req.Temperature = 0
			want := p.Act(req) // Rand nil
			for seed := range uint64(20) {
				req.Rand = seeded(seed)
				if got := p.Act(req); !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d: got %+v, want %+v", seed, got, want)
				}
			}
		})
	}
}

func TestSameSeedSameOutput(t *testing.T) {
	p := New(DefaultSkills())
	for name, req := range sampleConversations(t) {
		t.Run(name, func(t *testing.T) {
			req.Temperature = 1
			for seed := range uint64(20) {
				req.Rand = seeded(seed)
				a := p.Act(req)
				req.Rand = seeded(seed)
				if b := p.Act(req); !reflect.DeepEqual(a, b) {
					t.Fatalf("seed %d: %+v then %+v", seed, a, b)
				}
			}
		})
	}
}

func TestSeedsDifferAtTemperatureOne(t *testing.T) {
	p := New(DefaultSkills())
	for name, req := range sampleConversations(t) {
		t.Run(name, func(t *testing.T) {
			req.Temperature = 1
			distinct := map[string]bool{}
			for seed := range uint64(64) {
				req.Rand = seeded(seed)
				out := p.Act(req)
				distinct[out.Content+"|"+callsKey(out.ToolCalls)] = true
			}
			if got := len(distinct); got < 2 {
				t.Errorf("64 seeds gave %d distinct outputs, want at least 2", got)
			}
		})
	}
}

func callsKey(calls []ToolCall) string {
	s := ""
	for _, c := range calls {
		s += c.Name + c.Arguments + ";"
	}
	return s
}

func TestMalformedCallRate(t *testing.T) {
	tests := []struct {
		name string
		rate float64
	}{
		{"never", 0},
		{"sometimes", 0.2},
		{"often", 0.6},
	}
	const n = 1500
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := DefaultSkills()
			s.MalformedCall = tt.rate
			s.Guess = 0
			p := New(s)
			calls, bad := 0, 0
			for _, req := range sampleConversations(t) {
				for seed := range uint64(n) {
					req.Temperature = 1
					req.Rand = seeded(seed)
					for _, tc := range p.Act(req).ToolCalls {
						calls++
						if !wellFormed(tc) {
							bad++
						}
					}
				}
			}
			got := float64(bad) / float64(calls)
			// Four standard errors of a binomial share.
			tol := 4*math.Sqrt(tt.rate*(1-tt.rate)/float64(calls)) + 1e-9
			if math.Abs(got-tt.rate) > tol {
				t.Errorf("malformed share = %.4f over %d calls, want %.2f ± %.4f", got, calls, tt.rate, tol)
			}
		})
	}
}

func TestChoiceProbInRange(t *testing.T) {
	p := New(DefaultSkills())
	for name, req := range sampleConversations(t) {
		req.Temperature = 1
		for seed := range uint64(50) {
			req.Rand = seeded(seed)
			if got := p.Act(req).ChoiceProb; !(got > 0 && got <= 1) {
				t.Errorf("%s seed %d: ChoiceProb = %v, want in (0,1]", name, seed, got)
			}
		}
	}
}

func TestNoReasoning(t *testing.T) {
	s := DefaultSkills()
	s.NoReasoning = true
	for name, req := range sampleConversations(t) {
		if got := New(s).Act(req).Reasoning; got != "" {
			t.Errorf("%s: reasoning = %q, want empty", name, got)
		}
	}
}

func FuzzAct(f *testing.F) {
	f.Add(twoHop, "The founder of Velmora Labs is Ida Kestrel.", `{"task":"Find the founder of Velmora Labs."}`, 1.0, uint64(1))
	f.Add(oneHopTask, searchList, `{"query":["x"]}`, 0.0, uint64(2))
	f.Add("What is the of ?", "I could not find the x of .", `{"url":`, 0.7, uint64(3))
	p := New(DefaultSkills())
	f.Fuzz(func(t *testing.T, task, toolText, args string, temp float64, seed uint64) {
		msgs := []Message{system("<answer>"), user(task),
			{Role: "assistant", ToolCalls: []ToolCall{{Name: ToolSearch, Arguments: args}, {Name: ToolDelegate, Arguments: args}, {Name: ToolVisit, Arguments: args}}},
			toolMsg("", toolText), {Role: "tool", ToolCallID: "x", Content: toolText}, user(toolText)}
		for _, tools := range [][]Tool{plannerTools, executorTools, nil, {{Name: ToolVisit}}} {
			req := Request{Messages: msgs, Tools: tools, Temperature: temp, Rand: seeded(seed)}
			out := p.act(req, newChooser(req, p.Params()))
			if !(out.ChoiceProb > 0 && out.ChoiceProb <= 1) {
				t.Errorf("ChoiceProb = %v", out.ChoiceProb)
			}
		}
	})
}

func TestConcurrentAct(t *testing.T) {
	p := New(DefaultSkills())
	reqs := sampleConversations(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for name, req := range reqs {
				req.Temperature = 1
				req.Rand = seeded(uint64(g))
				if out := p.Act(req); out.ChoiceProb <= 0 {
					t.Errorf("%s: ChoiceProb = %v, want > 0", name, out.ChoiceProb)
				}
			}
		})
	}
	wg.Wait()
}
