package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/web"
)

// echoAgent is a planner/executor agent that sends its history back the
// way LangChain and LangGraph do: an assistant message without its
// reasoning, its tool-call arguments parsed and serialized again (keys
// sorted, no spaces), content "" where the model wrote none or only
// whitespace. edit, when set, rewrites the planner's history before its
// request number at (counting from 0), so history edits can be tested.
type echoAgent struct {
	// maxTurns bounds each conversation.
	maxTurns int
	edit     func(msgs []map[string]any) []map[string]any
	editAt   int
	// webURL, when set, is the sim web the executor's search and visit
	// calls go to (else they answer a fixed text).
	webURL string
}

// play drives one rollout through the offer's base URLs and returns the
// planner's last text.
func (a echoAgent) play(o offer) (string, error) {
	plannerTools := []map[string]any{{"type": "function", "function": map[string]any{"name": "delegate",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"task": map[string]any{"type": "string"}}}}}}
	execTools := []map[string]any{{"type": "function", "function": map[string]any{"name": "search",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}}}}}
	if a.webURL != "" {
		execTools = []map[string]any{benchTool("search", "query", "array"), benchTool("visit", "url", "array")}
	}
	msgs := []map[string]any{{"role": "system", "content": "You plan. Delegate with the delegate tool, then answer in <answer></answer>."},
		{"role": "user", "content": o.Task.Question}}
	var last string
	for turn := 0; turn < a.maxTurns; turn++ {
		if a.edit != nil && turn == a.editAt {
			msgs = a.edit(msgs)
		}
		m, err := echoCall(o.BaseURLs[RolePlanner], msgs, plannerTools)
		if err != nil {
			return "", err
		}
		msgs = append(msgs, m)
		last, _ = m["content"].(string)
		calls, _ := m["tool_calls"].([]any)
		if len(calls) == 0 {
			break
		}
		for _, c := range calls {
			call := c.(map[string]any)
			fn := call["function"].(map[string]any)
			report, err := a.executor(o.BaseURLs[RoleExecutor], fmt.Sprint(fn["arguments"]), execTools)
			if err != nil {
				return "", err
			}
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": call["id"], "content": report})
		}
	}
	return last, nil
}

// executor runs one delegated task to its report.
func (a echoAgent) executor(url, args string, tools []map[string]any) (string, error) {
	var in map[string]any
	_ = json.Unmarshal([]byte(args), &in)
	msgs := []map[string]any{{"role": "system", "content": "You search and report."}, {"role": "user", "content": fmt.Sprint(in["task"])}}
	report := ""
	for turn := 0; turn < a.maxTurns; turn++ {
		m, err := echoCall(url, msgs, tools)
		if err != nil {
			return "", err
		}
		msgs = append(msgs, m)
		report, _ = m["content"].(string)
		calls, _ := m["tool_calls"].([]any)
		if len(calls) == 0 {
			break
		}
		for _, c := range calls {
			call := c.(map[string]any)
			result := "result " + fmt.Sprint(call["id"])
			if a.webURL != "" {
				fn := call["function"].(map[string]any)
				var args map[string]any
				_ = json.Unmarshal([]byte(fmt.Sprint(fn["arguments"])), &args)
				result = benchWeb(a.webURL, fmt.Sprint(fn["name"]), args)
			}
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": call["id"], "content": result})
		}
	}
	return report, nil
}

// echoCall makes one chat call and returns the assistant message as the
// agent keeps it in its history: LangChain's echo of the answer.
func echoCall(url string, msgs []map[string]any, tools []map[string]any) (map[string]any, error) {
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs, "tools": tools})
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("chat: status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) != 1 {
		return nil, fmt.Errorf("chat answer: %v", err)
	}
	got := out.Choices[0].Message
	echo := map[string]any{"role": "assistant", "content": ""}
	if got.Content != nil && strings.TrimSpace(*got.Content) != "" {
		echo["content"] = *got.Content
	}
	if len(got.ToolCalls) > 0 {
		var calls []any
		for _, tc := range got.ToolCalls {
			var args any
			if json.Unmarshal([]byte(tc.Function.Arguments), &args) != nil {
				args = map[string]any{}
			}
			reserialized, _ := json.Marshal(args)
			calls = append(calls, map[string]any{"id": tc.ID, "type": "function",
				"function": map[string]any{"name": tc.Function.Name, "arguments": string(reserialized)}})
		}
		echo["tool_calls"] = calls
	}
	return echo, nil
}

// runEcho runs one rollout of agent a through g and returns its result.
func runEcho(t *testing.T, g *Gateway, a echoAgent) farm.RolloutResult {
	t.Helper()
	task, ft := testTask()
	return runEchoTask(t, g, a, task, ft)
}

// runEchoTask is runEcho on a task of the caller's.
func runEchoTask(t *testing.T, g *Gateway, a echoAgent, task rollout.RolloutTask, ft farm.Task) farm.RolloutResult {
	t.Helper()
	g.cfg.AgentURL = pushAgent(t, func(w http.ResponseWriter, o offer) {
		answer, err := a.play(o)
		if err != nil {
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"answer": answer})
	})
	scoring := farm.Scoring{Mode: rollout.ModeMGRPO, Weights: rollout.DefaultRewardWeights(), Scorer: exact{}, ExpertFallback: rollout.DefaultExpertFallback}
	return farm.Execute(context.Background(), g, scoring, task, ft)
}

// splitCounts sums a result's drift events and history edits and counts
// its sequences, planner and executors apart.
func splitCounts(res farm.RolloutResult) (drift, edits, plannerSeqs, execSeqs int) {
	drift, edits, plannerSeqs = res.Planner.Drifts, res.Planner.HistoryEdits, len(res.Planner.Sequences)
	for _, e := range res.Executors {
		drift += e.Drifts
		edits += e.HistoryEdits
		execSeqs += len(e.Sequences)
	}
	return drift, edits, plannerSeqs, execSeqs
}

// TestEchoAgentOneSamplePerTrajectory: an agent that echoes answers the
// way LangChain does (no reasoning, arguments re-serialized, content "")
// continues its trajectories: no drift, no history edit, one sequence per
// trajectory, each turn's finish reason recorded (tool_calls for a turn
// that called tools).
func TestEchoAgentOneSamplePerTrajectory(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{})
	res := runEcho(t, g, echoAgent{maxTurns: 4})
	if res.Error != "" {
		t.Fatalf("rollout failed: %s", res.Error)
	}
	drift, edits, ps, es := splitCounts(res)
	if drift != 0 || edits != 0 || ps != 1 || es != len(res.Executors) || len(res.Executors) != 2 {
		t.Fatalf("drift %d, history edits %d, planner sequences %d, executor sequences %d for %d executors; want 0, 0, 1, one each",
			drift, edits, ps, es, len(res.Executors))
	}
	seq := res.Planner.Sequences[0]
	if seq.FirstTurn != 0 || strings.Join(seq.TurnFinishReasons, ",") != "tool_calls,stop" || seq.Split != "" {
		t.Errorf("planner sequence holds turns from %d, finish reasons %v, split %q; want 0, [tool_calls stop], none",
			seq.FirstTurn, seq.TurnFinishReasons, seq.Split)
	}
}

// TestHistoryEditsCounted: a planner that truncates, summarizes or
// rewrites its system prompt before its second request starts a new
// sequence there, recorded as a history edit with the message index where
// the history changed and why; never as drift.
func TestHistoryEditsCounted(t *testing.T) {
	cases := []struct {
		name string
		edit func([]map[string]any) []map[string]any
		at   int
		why  string
	}{
		{"truncate", func(m []map[string]any) []map[string]any {
			// Keep the system prompt and the task, drop the assistant's
			// delegations, keep one tool result as a user note.
			return append(m[:2:2], map[string]any{"role": "user", "content": "Reports: " + fmt.Sprint(m[len(m)-1]["content"])})
		}, 2, "removed or replaced"},
		{"summarize", func(m []map[string]any) []map[string]any {
			return append(m[:2:2], map[string]any{"role": "assistant", "content": "Summary: I delegated two searches."},
				map[string]any{"role": "user", "content": "Now answer."})
		}, 2, "removed or replaced"},
		{"system prompt", func(m []map[string]any) []map[string]any {
			c := append([]map[string]any(nil), m...)
			c[0] = map[string]any{"role": "system", "content": "You plan, briefly."}
			return c
		}, 0, "system prompt"},
		{"dropped messages", func(m []map[string]any) []map[string]any {
			// Drop the assistant message and the first tool result:
			// the request resumes at the second tool result.
			return append(m[:2:2], m[4:]...)
		}, 2, "removed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, _ := mustGateway(t, rollout.ModeMGRPO, Config{})
			res := runEcho(t, g, echoAgent{maxTurns: 4, edit: c.edit, editAt: 1})
			if res.Error != "" {
				t.Fatalf("rollout failed: %s", res.Error)
			}
			drift, edits, ps, _ := splitCounts(res)
			if drift != 0 || edits != 1 || ps != 2 {
				t.Fatalf("drift %d, history edits %d, planner sequences %d; want 0, 1, 2", drift, edits, ps)
			}
			sp := res.Tree.Planner.Splits
			if len(sp) != 1 || sp[0].Turn != 1 || sp[0].Message != c.at || sp[0].Reason != rollout.SplitHistoryEdit || !strings.Contains(sp[0].Detail, c.why) {
				t.Fatalf("planner splits %+v, want one history edit at turn 1, message %d, saying %q", sp, c.at, c.why)
			}
			second := res.Planner.Sequences[1]
			if second.FirstTurn != 1 || second.Split != rollout.SplitHistoryEdit || len(second.TurnFinishReasons) != len(res.Tree.Planner.Turns)-1 {
				t.Errorf("second sequence from turn %d, split %q, %d turns; want turn 1, history_edit, the rest",
					second.FirstTurn, second.Split, len(second.TurnFinishReasons))
			}
			if first := res.Planner.Sequences[0]; first.Split != "" || len(first.TurnFinishReasons) != 1 {
				t.Errorf("first sequence split %q with %d turns, want none and 1", first.Split, len(first.TurnFinishReasons))
			}
		})
	}
}

// TestEchoAgentSim runs the LangChain-style echo agent against the sim in
// both dialects, with the sim's template dropping earlier reasoning and
// without: drift 0, history edits 0, one sample per trajectory. The sim's
// model writes reasoning the agent never sends back, so this holds only
// because the gateway continues each trajectory in tokens (only its first
// call goes to the chat route) instead of having the engine re-render the
// echoed history.
func TestEchoAgentSim(t *testing.T) {
	for _, c := range []struct {
		dialect string
		strip   bool
		// all turns every other template behaviour of the sim on too:
		// reasoning dropped before the last query, tool results merged,
		// arguments re-serialized, content trimmed, reasoning read only
		// from the field the server version writes.
		all bool
	}{{"vllm", false, false}, {"sglang", false, false}, {"vllm", true, false}, {"sglang", true, false}, {"vllm", false, true}, {"sglang", false, true}} {
		t.Run(fmt.Sprintf("%s strip-reasoning=%v all-template-flags=%v", c.dialect, c.strip, c.all), func(t *testing.T) {
			g, _, log := simGateway(t, c.dialect, 400, func(cfg *simllm.Config) {
				cfg.StripReasoning = c.strip
				if c.all {
					cfg.StripReasoningBeforeLastQuery, cfg.MergeToolResults, cfg.CanonicalToolArgs = true, true, true
					cfg.TrimContent, cfg.StrictReasoningInput = true, true
				}
			})
			world, err := web.Generate(web.Config{Seed: 3, Questions: 4})
			if err != nil {
				t.Fatal(err)
			}
			ws := httptest.NewServer(world.Handler())
			t.Cleanup(ws.Close)
			turns, trajectories := 0, 0
			for k := range 3 {
				q := world.Questions[k]
				task := rollout.RolloutTask{Run: "r", Step: 1, QueryID: q.ID, K: 0, Seed: int64(7 + k)}
				res := runEchoTask(t, g, echoAgent{maxTurns: 8, webURL: ws.URL}, task, farm.Task{ID: q.ID, Question: q.Question, Answer: q.Answer})
				if res.Error != "" {
					t.Fatalf("rollout %d failed: %s", k, res.Error)
				}
				drift, edits, ps, es := splitCounts(res)
				if drift != 0 || edits != 0 || ps != 1 || es != len(res.Executors) {
					t.Errorf("rollout %d: drift %d, history edits %d, planner sequences %d, executor sequences %d for %d executors; want 0, 0, 1, one each",
						k, drift, edits, ps, es, len(res.Executors))
				}
				trajectories += 1 + len(res.Executors)
				for _, tr := range res.Tree.Executors {
					turns += len(tr.Turns)
				}
				turns += len(res.Tree.Planner.Turns)
			}
			reasoning := 0
			log.mu.Lock()
			defer log.mu.Unlock()
			for _, e := range log.all {
				if strings.Contains(string(e.response), "think") || strings.Contains(string(e.response), `"reasoning`) {
					reasoning++
				}
			}
			paths := map[string]int{}
			for _, e := range log.all {
				paths[e.path]++
			}
			t.Logf("%d trajectories, %d turns, %d engine answers with reasoning; engine routes %v", trajectories, turns, reasoning, paths)
			// The token path: a trajectory's first call renders its
			// messages (the chat route), every later one continues in ids.
			if chat := paths["/v1/chat/completions"]; chat != trajectories {
				t.Errorf("%d chat-route calls for %d trajectories: want only each trajectory's first call rendered as messages", chat, trajectories)
			}
			if turns <= trajectories {
				t.Errorf("%d turns for %d trajectories: the agent never continued a conversation", turns, trajectories)
			}
		})
	}
}
