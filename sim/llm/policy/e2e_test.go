package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/sim/web"
)

// The end-to-end test plays whole tasks of a generated world with no HTTP:
// a tiny agent loop feeds the policy's planner turns, runs an executor loop
// for every delegation, and answers search and visit calls from the World
// directly.

const (
	e2eBase       = "http://web.sim"
	plannerPrompt = "You are a planner. Delegate subtasks and reply with <answer>…</answer>."
	execPrompt    = "You are an executor. Use search and visit, then report what you found."
	maxLoopTurns  = 80 // a safety net well above any skill budget
)

// actor plays turns: a *Policy, or a wrapper that records them.
type actor interface{ Act(Request) Output }

// rollout is the outcome of one played task.
type rollout struct {
	answer   string
	correct  bool
	formatOK bool
	d        int // valid delegations
	reward   float64
}

var answerTag = regexp.MustCompile(`<answer>(.*?)</answer>`)

// loop plays one agent: it calls the policy until a turn makes no tool call,
// answering calls with observe. It returns the final content and whether
// every tool call was well formed.
func loop(p actor, msgs []Message, tools []Tool, rng *rand.Rand, observe func(ToolCall) string) (string, bool) {
	formatOK := true
	ids := 0
	for range maxLoopTurns {
		out := p.Act(Request{Messages: msgs, Tools: tools, Temperature: 1, Rand: rng})
		var valid []ToolCall
		content := out.Content
		for _, tc := range out.ToolCalls {
			if !wellFormed(tc) {
				// What the server's Hermes parser leaves in the content.
				content += fmt.Sprintf("<tool_call>\n{\"name\": %q, \"arguments\": %s}\n</tool_call>", tc.Name, tc.Arguments)
				formatOK = false
				continue
			}
			ids++
			tc.ID = fmt.Sprintf("call_%d", ids)
			valid = append(valid, tc)
		}
		msgs = append(msgs, Message{Role: "assistant", Content: content, Reasoning: out.Reasoning, ToolCalls: valid})
		if len(valid) == 0 {
			if len(out.ToolCalls) == 0 {
				return content, formatOK
			}
			msgs = append(msgs, user("Your tool call could not be parsed. Try again."))
			continue
		}
		for _, tc := range valid {
			// Tool messages carry only the call ID, as OpenAI clients send them.
			msgs = append(msgs, Message{Role: "tool", ToolCallID: tc.ID, Content: observe(tc)})
		}
	}
	return "", false
}

// playQuestion plays one rollout of q.
func playQuestion(p actor, w *web.World, q web.Question, rng *rand.Rand) rollout {
	var r rollout
	execute := func(tc ToolCall) string {
		r.d++
		task, _ := argsOfLoose(tc)["task"].(string)
		report, _ := loop(p, []Message{system(execPrompt), user(task)}, executorTools, rng, func(tc ToolCall) string {
			return observeWeb(w, tc)
		})
		return report
	}
	final, formatOK := loop(p, []Message{system(plannerPrompt), user(q.Question)}, plannerTools, rng, execute)
	m := answerTag.FindStringSubmatch(final)
	r.formatOK = formatOK && m != nil
	if m != nil {
		r.answer = strings.TrimSpace(m[1])
	}
	r.correct = strings.EqualFold(r.answer, q.Answer)
	if r.formatOK {
		r.reward = 0.1
		if r.correct {
			r.reward += 0.9
		}
	}
	return r
}

// observeWeb answers an executor's call from the world: a numbered Markdown
// list of results per query, or the visible text of each page.
func observeWeb(w *web.World, tc ToolCall) string {
	args := argsOfLoose(tc)
	var b strings.Builder
	switch tc.Name {
	case ToolSearch:
		for _, q := range stringList(args["query"]) {
			fmt.Fprintf(&b, "## Results for %q\n", q)
			for _, res := range w.Search(e2eBase, q, 5) {
				fmt.Fprintf(&b, "%d. [%s](%s)\n%s\n", res.Position, res.Title, res.Link, res.Snippet)
			}
		}
	case ToolVisit:
		for _, raw := range stringList(args["url"]) {
			u, err := url.Parse(raw)
			text, ok := "", false
			if err == nil {
				text, ok = w.PageText(u.Path)
			}
			if !ok {
				fmt.Fprintf(&b, "%s: page not found\n", raw)
				continue
			}
			fmt.Fprintf(&b, "Content of %s:\n%s\n", raw, text)
		}
	default:
		b.WriteString("unknown tool")
	}
	return b.String()
}

func argsOfLoose(tc ToolCall) map[string]any {
	cl, _ := parseCall(tc)
	return map[string]any{"task": cl.task, "query": cl.query, "url": cl.url}
}

func stringList(v any) []string {
	l, _ := v.([]string)
	return l
}

// groupStats summarizes K rollouts of many questions.
type groupStats struct {
	accuracy      float64
	meanReward    float64
	varianceShare float64 // groups whose rewards are not all equal
	diverseShare  float64 // groups whose answers are not all identical
	d             map[int]int
}

func (g groupStats) String() string {
	keys := make([]int, 0, len(g.d))
	for k := range g.d {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d:%d", k, g.d[k]))
	}
	return fmt.Sprintf("accuracy %.3f, mean reward %.3f, groups with reward variance %.2f, groups with differing answers %.2f, d distribution {%s}",
		g.accuracy, g.meanReward, g.varianceShare, g.diverseShare, strings.Join(parts, " "))
}

func playGroups(p *Policy, w *web.World, questions []web.Question, k int, seed uint64) groupStats {
	g := groupStats{d: map[int]int{}}
	n := 0
	for qi, q := range questions {
		rewards := map[float64]bool{}
		answers := map[string]bool{}
		for j := range k {
			rng := rand.New(rand.NewPCG(seed, uint64(qi*1000+j)))
			r := playQuestion(p, w, q, rng)
			n++
			if r.correct && r.formatOK {
				g.accuracy++
			}
			g.meanReward += r.reward
			g.d[r.d]++
			rewards[r.reward] = true
			answers[r.answer] = true
		}
		if len(rewards) > 1 {
			g.varianceShare++
		}
		if len(answers) > 1 {
			g.diverseShare++
		}
	}
	g.accuracy /= float64(n)
	g.meanReward /= float64(n)
	g.varianceShare /= float64(len(questions))
	g.diverseShare /= float64(len(questions))
	return g
}

func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("plays hundreds of whole tasks")
	}
	w, err := web.Generate(web.Config{Seed: 7, Questions: 100})
	if err != nil {
		t.Fatalf("generate world: %v", err)
	}
	tests := []struct {
		name           string
		skills         Skills
		k              int
		minAcc, maxAcc float64
		minVariance    float64
		minDistinctD   int
	}{
		{"default skills", DefaultSkills(), 8, 0.3, 0.8, 0.5, 3},
		{"perfect skills", PerfectSkills(), 4, 0.95, 1, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := playGroups(New(tt.skills), w, w.Questions, tt.k, 1)
			t.Logf("%s over %d questions × K=%d: %v", tt.name, len(w.Questions), tt.k, g)
			if g.accuracy < tt.minAcc || g.accuracy > tt.maxAcc {
				t.Errorf("accuracy = %.3f, want in [%.2f, %.2f]", g.accuracy, tt.minAcc, tt.maxAcc)
			}
			if g.varianceShare < tt.minVariance {
				t.Errorf("share of groups with reward variance = %.2f, want ≥ %.2f", g.varianceShare, tt.minVariance)
			}
			if len(g.d) < tt.minDistinctD {
				t.Errorf("d took %d distinct values, want ≥ %d", len(g.d), tt.minDistinctD)
			}
			if math.IsNaN(g.meanReward) {
				t.Errorf("mean reward is NaN")
			}
		})
	}
}
