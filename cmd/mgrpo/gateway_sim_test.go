package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/farm/gateway/gatewaytest"
	"github.com/mgrpo/mgrpo/rollout"
)

// simWebURL is the sim web's address in a `--sim` run on the fixed ports.
const simWebURL = "http://127.0.0.1:18001"

// goAgent is a push agent service written against the wire contract alone
// (docs/gateway.md), as a user's agent would be: a planner whose delegate
// tool runs an executor conversation with search and visit tools on the
// sim web, each on its role's base URL. It answers what the planner wrote.
func goAgent(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var task struct {
			RolloutID string                    `json:"rollout_id"`
			Task      struct{ Question string } `json:"task"`
			BaseURLs  map[string]string         `json:"base_urls"`
		}
		if err := json.NewDecoder(r.Body).Decode(&task); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answer, err := agentLoop(task.BaseURLs["planner"], "You are the planner. Delegate subtasks, then answer in <answer></answer> tags.",
			task.Task.Question, []any{tool("delegate", "task", "string")}, "", func(c gatewaytest.Call) string {
				sub, _ := c.Args["task"].(string)
				report, err := agentLoop(task.BaseURLs["executor"], "You are a web researcher. Search, visit, then report.", sub,
					[]any{tool("search", "query", "array"), tool("visit", "url", "array")}, c.ID, webTool)
				if err != nil {
					return "The executor failed: " + err.Error()
				}
				return report
			})
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"answer": answer})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func tool(name, arg, typ string) map[string]any {
	prop := map[string]any{"type": typ}
	if typ == "array" {
		prop["items"] = map[string]any{"type": "string"}
	}
	return map[string]any{"type": "function", "function": map[string]any{"name": name, "description": name,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{arg: prop}, "required": []string{arg}}}}
}

// agentLoop runs one conversation of the Go agent (gatewaytest.Converse,
// 12 turns at temperature 0.3, which the run's settings override); an
// executor's names the planner's delegate call that started it.
func agentLoop(base, system, user string, tools []any, delegation string, run func(gatewaytest.Call) string) (string, error) {
	return gatewaytest.Converse(http.DefaultClient, base, gatewaytest.Conversation{System: system, User: user, Tools: tools,
		MaxTurns: 12, Extra: map[string]any{"temperature": 0.3}, Delegation: delegation}, run)
}

var htmlTag = regexp.MustCompile(`<[^>]+>`)

// webTool runs search (Serper-shaped JSON, verbatim) and visit (the page's
// text) against the sim web.
func webTool(c gatewaytest.Call) string {
	name, args := c.Name, c.Args
	list := func(key string) []string {
		var out []string
		switch v := args[key].(type) {
		case string:
			out = append(out, v)
		case []any:
			for _, x := range v {
				if s, ok := x.(string); ok {
					out = append(out, s)
				}
			}
		}
		return out
	}
	var parts []string
	switch name {
	case "search":
		for _, q := range list("query") {
			body, _ := json.Marshal(map[string]string{"q": q})
			resp, err := http.Post(simWebURL+"/search", "application/json", bytes.NewReader(body))
			if err != nil {
				return "search failed: " + err.Error()
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			parts = append(parts, string(raw))
		}
	case "visit":
		for _, u := range list("url") {
			resp, err := http.Get(u)
			if err != nil {
				return "visit failed: " + err.Error()
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			parts = append(parts, strings.Join(strings.Fields(htmlTag.ReplaceAllString(string(raw), " ")), " "))
		}
	default:
		return "unknown tool " + name
	}
	return strings.Join(parts, "\n\n")
}

// checkGatewayRun checks a trained run whose rollouts came through the
// gateway: both policy versions advanced, every sample's tokens are the
// engine's (the sim trainer reproduced every weighted token with the
// sampler's logprob), each trajectory is one sample (no drift, no history
// edit), executors were delegated, and the rewards vary. With
// linked (an agent that sends X-Mgrpo-Delegation), every executor
// trajectory of step 1 is the one planner delegate call's that started it.
func checkGatewayRun(t *testing.T, out string, steps int, linked bool) {
	t.Helper()
	checkTrainedRun(t, out, steps, []rollout.Role{rollout.RolePlanner, rollout.RoleExecutor})
	sums, _ := rollout.ReadSummaries(filepath.Join(out, rollout.SummaryFile))
	for _, sum := range sums {
		// One sample per trajectory: the gateway matched every request to
		// its trajectory and no prompt broke the sequence sampled so far.
		t.Logf("step %d: %d drift events, %d history edits, %d planner samples for %d rollouts, %d executor samples (K·d̄ = %d per query, %d queries)",
			sum.Step, sum.DriftEvents, sum.HistoryEdits, sum.PlannerSamples, sum.Rollouts, sum.ExecutorSamples, sum.Rollouts/max(sum.Queries, 1)*sum.DBar, sum.Queries)
		if sum.DriftEvents != 0 || sum.HistoryEdits != 0 {
			t.Errorf("step %d: %d drift events, %d history edits; want 0 and 0", sum.Step, sum.DriftEvents, sum.HistoryEdits)
			for _, line := range readLines(t, filepath.Join(rollout.StepDir(out, sum.Step), rollout.RolloutsFile)) {
				var rec rollout.RolloutRecord
				if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Tree == nil || rec.Tree.Planner == nil {
					continue
				}
				for i, tr := range append([]*rollout.TrajectoryRecord{rec.Tree.Planner}, rec.Tree.Executors...) {
					if tr != nil && (len(tr.Splits) > 0 || (i < len(rec.Drifts) && rec.Drifts[i] > 0)) {
						t.Logf("step %d rollout %s trajectory %d (%s, %d turns): drifts %v, splits %+v", sum.Step, rec.ID, i, tr.Role, len(tr.Turns), rec.Drifts, tr.Splits)
					}
				}
			}
		}
		if k := sum.Rollouts / max(sum.Queries, 1); sum.PlannerSamples != sum.Rollouts || sum.ExecutorSamples != sum.Queries*k*sum.DBar {
			t.Errorf("step %d: %d planner samples for %d rollouts, %d executor samples for %d queries × K %d × d̄ %d; want one sample per trajectory",
				sum.Step, sum.PlannerSamples, sum.Rollouts, sum.ExecutorSamples, sum.Queries, k, sum.DBar)
		}
		for role, rec := range sum.Training {
			m := rec.Metrics
			if d := m["logprob_diff_abs:max"]; d > 1e-5 {
				t.Errorf("step %d %s: max |trainer − sampler logprob| %g, want ≤ 1e-5", sum.Step, role, d)
			}
			if n := m["unmatched_tokens:sum"]; n != 0 {
				t.Errorf("step %d %s: %v tokens the trainer could not reproduce", sum.Step, role, n)
			}
		}
	}
	lines := readLines(t, filepath.Join(rollout.StepDir(out, 1), rollout.RolloutsFile))
	rewards := map[string]bool{}
	executors := 0
	for _, line := range lines {
		var rec struct {
			Scores struct {
				Main float64 `json:"main"`
			} `json:"scores"`
			Tree struct {
				Planner struct {
					Error string `json:"error"`
					Steps []struct {
						Calls []struct {
							Name      string          `json:"name"`
							Arguments json.RawMessage `json:"arguments"`
							Executor  int             `json:"executor"`
						} `json:"calls"`
					} `json:"steps"`
				} `json:"planner"`
				Executors []struct {
					Task string `json:"task"`
				} `json:"executors"`
			} `json:"tree"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Tree.Planner.Error != "" {
			t.Errorf("a rollout failed: %s", rec.Tree.Planner.Error)
		}
		executors += len(rec.Tree.Executors)
		if linked {
			from := make([]int, len(rec.Tree.Executors))
			for _, st := range rec.Tree.Planner.Steps {
				for _, c := range st.Calls {
					if c.Executor < 0 {
						continue
					}
					var args struct{ Task string }
					_ = json.Unmarshal(c.Arguments, &args)
					if c.Name != "delegate" || c.Executor >= len(from) || rec.Tree.Executors[c.Executor].Task != args.Task {
						t.Errorf("planner call %s(%s) links to executor %d of %d: want a delegate call and its executor's task", c.Name, c.Arguments, c.Executor, len(from))
						continue
					}
					from[c.Executor]++
				}
			}
			for i, n := range from {
				if n != 1 {
					t.Errorf("executor %d (%q) is linked from %d planner calls, want 1", i, rec.Tree.Executors[i].Task, n)
				}
			}
		}
		rewards[fmt.Sprint(rec.Scores.Main)] = true
	}
	if executors == 0 {
		t.Error("no executor trajectory in step 1: the planner never delegated through the gateway")
	}
	if len(rewards) < 2 {
		t.Errorf("step 1's main rewards are all %v: the sim's policy should vary", rewards)
	}
}

// TestTrainSimGatewayGoAgent trains both roles from a push agent that
// knows only the wire contract.
func TestTrainSimGatewayGoAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("trains in the sim world")
	}
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := runCLI(t, simTrainArgs(out, 2, "--agent-url", goAgent(t))...); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	checkGatewayRun(t, out, 2, true)
}

// TestTrainSimGatewayJSAgent trains both roles from the OpenAI Agents SDK
// example (examples/openai-agents-js), served as a push agent.
func TestTrainSimGatewayJSAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("trains in the sim world")
	}
	dir := filepath.Join("..", "..", "examples", "openai-agents-js")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@openai", "agents")); err != nil {
		t.Skipf("%s/node_modules is missing: run `npm ci` there (.ci/run does)", dir)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	url := startNode(t, node, dir, "push.js")
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := runCLI(t, simTrainArgs(out, 2, "--agent-url", url)...); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	checkGatewayRun(t, out, 2, false)
}

// TestTrainSimGatewayJSPullAgent trains both roles from the plain openai
// SDK loop (examples/openai-agents-js/pull.js), which pulls its tasks.
func TestTrainSimGatewayJSPullAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("trains in the sim world")
	}
	dir := filepath.Join("..", "..", "examples", "openai-agents-js")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai")); err != nil {
		t.Skipf("%s/node_modules is missing: run `npm ci` there (.ci/run does)", dir)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	const addr = "127.0.0.1:18452"
	startNode(t, node, dir, "pull.js", "GATEWAY_URL=http://"+addr, "CONCURRENCY=8")
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := runCLI(t, simTrainArgs(out, 2, "--gateway-addr", addr)...); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	checkGatewayRun(t, out, 2, true)
}

// startNode runs a node script of dir that serves on the port it prints
// ("listening on http://…") and returns that URL; the process ends with
// the test.
func startNode(t *testing.T, node, dir, script string, env ...string) string {
	t.Helper()
	cmd := exec.Command(node, script)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "PORT=0", "SIM_WEB_URL="+simWebURL), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", script, stderr.String())
		}
	})
	lines := make(chan string, 1)
	go func() {
		buf := make([]byte, 4096)
		var acc string
		for {
			n, err := stdout.Read(buf)
			acc += string(buf[:n])
			if i := strings.Index(acc, "listening on "); i >= 0 {
				if j := strings.IndexByte(acc[i:], '\n'); j >= 0 {
					lines <- strings.TrimSpace(acc[i+len("listening on ") : i+j])
					_, _ = io.Copy(io.Discard, stdout)
					return
				}
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	select {
	case u, ok := <-lines:
		if !ok {
			t.Fatalf("%s exited before listening:\n%s", script, stderr.String())
		}
		return u
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not say where it listens within 30s:\n%s", script, stderr.String())
	}
	return ""
}

// TestEvalSimGatewayGoAgent evaluates a push agent: eval's runs go through
// the gateway as training's do.
func TestEvalSimGatewayGoAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("evaluates in the sim world")
	}
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, "eval", "--sim", "--benchmark", "webwalkerqa", "--scorer", "exact", "--runs", "1", "--limit", "4",
		"--out", dir, "--agent-url", goAgent(t))
	if code != 0 || !strings.Contains(stdout, "Avg Pass@1") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	lines := readLines(t, filepath.Join(dir, "results.jsonl"))
	if len(lines) != 4 {
		t.Fatalf("results.jsonl has %d lines, want 4", len(lines))
	}
	for _, l := range lines {
		if strings.Contains(l, "agent service") {
			t.Errorf("a run failed in the agent service: %.300s", l)
		}
	}
}
