package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/internal/httpretry"
	"github.com/mgrpo/mgrpo/internal/httpserve/httpservetest"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
)

// exact is normalized exact match.
type exact struct{}

func (exact) Score(_ context.Context, _, prediction, gold string) (rollout.Verdict, error) {
	if strings.EqualFold(strings.TrimSpace(prediction), strings.TrimSpace(gold)) {
		return rollout.Verdict{Correct: 1, Method: "exact"}, nil
	}
	return rollout.Verdict{Method: "exact"}, nil
}

func TestPushRolloutTree(t *testing.T) {
	g, models := mustGateway(t, rollout.ModeMGRPO, Config{})
	g.cfg.AgentURL = pushAgent(t, nil)
	task, ft := testTask()
	scoring := farm.Scoring{Mode: rollout.ModeMGRPO, Weights: rollout.DefaultRewardWeights(), Scorer: exact{}, ExpertFallback: rollout.DefaultExpertFallback}
	res := farm.Execute(context.Background(), g, scoring, task, ft)
	if res.Error != "" {
		t.Fatalf("rollout failed: %s", res.Error)
	}
	tree := res.Tree
	if got, want := len(tree.Planner.Turns), 2; got != want {
		t.Fatalf("planner turns %d, want %d", got, want)
	}
	if got, want := len(tree.Executors), 2; got != want {
		t.Fatalf("d_k = %d executor trajectories, want %d", got, want)
	}
	if tree.Answer != "42" || !tree.Planner.FormatOK {
		t.Errorf("answer %q format_ok %v, want 42 true (errors %v)", tree.Answer, tree.Planner.FormatOK, tree.Planner.FormatErrors)
	}
	tasks := map[string]bool{}
	for _, e := range tree.Executors {
		tasks[e.Task] = true
		if !e.FormatOK || !strings.HasPrefix(e.Final, "report on ") {
			t.Errorf("executor %d: format_ok %v final %q, want a valid report", e.Index, e.FormatOK, e.Final)
		}
	}
	if !tasks["Find A."] || !tasks["Find B."] {
		t.Errorf("executor tasks %v, want Find A. and Find B.", tasks)
	}
	calls := tree.Planner.Steps[0].Calls
	if len(calls) != 2 || calls[0].Name != "delegate" || !strings.HasPrefix(calls[0].Observation, "report on ") {
		t.Errorf("planner's first step %+v, want two delegate calls with their reports as observations", calls)
	}
	// One sequence per trajectory: every prompt extended the previous
	// prompt and completion, so the planner's two turns are one sample.
	if got := len(res.Planner.Sequences); got != 1 || res.Planner.Drifts != 0 {
		t.Errorf("planner sequences %d drifts %d, want 1 and 0", got, res.Planner.Drifts)
	}
	if res.Scores.Correct != 1 || !res.Scores.FormatOK {
		t.Errorf("scores %+v, want correct and format ok", res.Scores)
	}
	// The run's sampling wins: the agent's temperature never reaches the
	// client; every call has a seed.
	for _, r := range append(models[RolePlanner].requests(), models[RoleExecutor].requests()...) {
		if r.Sampling == nil || r.Sampling.Temperature != nil || r.Sampling.Seed == nil {
			t.Errorf("request sampling %+v, want a seed and no temperature", r.Sampling)
		}
	}
}

// startHeld starts a rollout whose push agent hands its offer to the test
// and answers only when release is closed.
func startHeld(t *testing.T, g *Gateway) (offer, chan struct{}, chan *agents.Rollout) {
	t.Helper()
	offers, release, done := make(chan offer, 1), make(chan struct{}), make(chan *agents.Rollout, 1)
	g.cfg.AgentURL = pushAgent(t, func(w http.ResponseWriter, o offer) {
		offers <- o
		<-release
		json.NewEncoder(w).Encode(map[string]any{"answer": "<answer>x</answer>"})
	})
	task, ft := testTask()
	go func() { done <- g.Run(context.Background(), task, ft) }()
	return <-offers, release, done
}

func errorCode(t *testing.T, body map[string]any) string {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	if !ok {
		t.Fatalf("body %v: not OpenAI's error shape", body)
	}
	if _, ok := e["message"].(string); !ok {
		t.Errorf("error %v: no message", e)
	}
	if _, ok := e["type"].(string); !ok {
		t.Errorf("error %v: no type", e)
	}
	code, _ := e["code"].(string)
	return code
}

func TestWireErrors(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{})
	o, release, done := startHeld(t, g)
	base := o.BaseURLs[RolePlanner]
	chat := map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": "hi"}}}
	cases := []struct {
		name   string
		url    string
		body   any
		status int
		code   string
		says   string
	}{
		{"unknown rollout", g.URL() + "/r/nope/planner/v1/chat/completions", chat, 404, "rollout_not_found", "nope"},
		{"role the mode lacks", strings.TrimSuffix(base, "/planner/v1") + "/agent/v1/chat/completions", chat, 404, "role_not_found", "mode mgrpo"},
		{"no secret", g.URL() + "/r/" + o.RolloutID + "/planner/v1/chat/completions", chat, 403, "wrong_rollout_secret", "no secret"},
		{"wrong secret", g.URL() + "/r/" + o.RolloutID + ".00112233445566778899aabbccddeeff/planner/v1/chat/completions", chat, 403, "wrong_rollout_secret", "wrong secret"},
		{"result without the secret", g.URL() + "/v1/tasks/" + o.RolloutID + "/result", map[string]any{"answer": "stolen"}, 403, "wrong_rollout_secret", o.RolloutID},
		{"malformed body", base + "/chat/completions", `{"messages": [`, 400, "invalid_json", "request body"},
		{"no messages", base + "/chat/completions", map[string]any{"messages": []any{}}, 400, "invalid_request", "messages"},
		{"bad role", base + "/chat/completions", map[string]any{"messages": []map[string]any{{"role": "robot", "content": "x"}}}, 400, "invalid_request", "robot"},
		{"n > 1", base + "/chat/completions", map[string]any{"n": 2, "messages": []map[string]any{{"role": "user", "content": "x"}}}, 400, "invalid_request", "n 2"},
		{"unknown route", g.URL() + "/v2/whatever", chat, 404, "route_not_found", "/v2/whatever"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := post(t, c.url, c.body)
			if status != c.status {
				t.Errorf("status %d, want %d (%v)", status, c.status, body)
			}
			if code := errorCode(t, body); code != c.code {
				t.Errorf("code %q, want %q", code, c.code)
			}
			if msg := body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, c.says) {
				t.Errorf("message %q does not say %q", msg, c.says)
			}
		})
	}
	// A real call, so the rollout has a planner turn.
	if status, body := post(t, base+"/chat/completions", chat); status != 200 {
		t.Fatalf("chat: %d %v", status, body)
	}
	resp, err := http.Get(base + "/models")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("models: %v %v", resp, err)
	}
	resp.Body.Close()
	close(release)
	<-done
	status, body := post(t, base+"/chat/completions", chat)
	if status != 409 || errorCode(t, body) != "rollout_finished" {
		t.Errorf("a call after the rollout finished: %d %v, want 409 rollout_finished", status, body)
	}
	status, body = post(t, g.URL()+"/v1/tasks/"+handleOf(g, o)+"/result", map[string]any{"answer": "x"})
	if status != 409 {
		t.Errorf("a result after the rollout finished: %d %v, want 409", status, body)
	}
}

func TestSingleModeRoles(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeSingle, Config{})
	o, release, done := startHeld(t, g)
	if _, ok := o.BaseURLs[RoleAgent]; !ok || len(o.BaseURLs) != 1 {
		t.Fatalf("base urls %v, want agent only", o.BaseURLs)
	}
	status, body := post(t, strings.Replace(o.BaseURLs[RoleAgent], "/agent/", "/executor/", 1)+"/chat/completions",
		map[string]any{"messages": []map[string]any{{"role": "user", "content": "x"}}})
	if status != 404 || !strings.Contains(body["error"].(map[string]any)["message"].(string), "mode single") {
		t.Errorf("executor role in mode single: %d %v, want 404 naming the mode", status, body)
	}
	if status, body := post(t, o.BaseURLs[RoleAgent]+"/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": o.Task.Question}}}); status != 200 {
		t.Fatalf("agent call: %d %v", status, body)
	}
	close(release)
	tree := <-done
	if tree.Planner.Role != agents.RoleSingle || len(tree.Planner.Turns) != 1 || tree.Answer != "x" {
		t.Errorf("single tree: role %s, %d turns, answer %q", tree.Planner.Role, len(tree.Planner.Turns), tree.Answer)
	}
}

// infra checks a tree is an agent-service infra failure saying says.
func infra(t *testing.T, tree *agents.Rollout, says string) {
	t.Helper()
	p := tree.Planner
	if p.FailureKind != failure.KindInfra || p.FailureCause != FailureCause || !strings.Contains(p.Error, says) {
		t.Errorf("planner error %q kind %q cause %q, want infra %s saying %q", p.Error, p.FailureKind, p.FailureCause, FailureCause, says)
	}
}

func TestAgentFailuresAreInfra(t *testing.T) {
	cases := []struct {
		name   string
		handle func(w http.ResponseWriter, o offer)
		says   string
	}{
		{"service errors", func(w http.ResponseWriter, o offer) { http.Error(w, "boom", http.StatusInternalServerError) }, "500 Internal Server Error: boom"},
		{"agent reports an error", func(w http.ResponseWriter, o offer) { w.Write([]byte(`{"error":"tool crashed"}`)) }, "tool crashed"},
		{"not a result", func(w http.ResponseWriter, o offer) { w.Write([]byte(`hello`)) }, "not a JSON result"},
		{"never calls", func(w http.ResponseWriter, o offer) { w.Write([]byte(`{"answer":"42"}`)) }, "never called the planner"},
		{"deadline", func(w http.ResponseWriter, o offer) { time.Sleep(2 * time.Second) }, "deadline"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, _ := mustGateway(t, rollout.ModeMGRPO, Config{RolloutTimeout: 300 * time.Millisecond})
			g.cfg.AgentURL = pushAgent(t, c.handle)
			task, ft := testTask()
			infra(t, g.Run(context.Background(), task, ft), c.says)
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		g, _ := mustGateway(t, rollout.ModeMGRPO, Config{AgentURL: "http://127.0.0.1:1/"})
		task, ft := testTask()
		infra(t, g.Run(context.Background(), task, ft), "post the task")
	})
}

// engineDown is the client's error for an engine that answered 502 on
// every attempt.
var engineDown = &llm.GiveUpError{Endpoint: "http://engine-7:8000/v1", Status: 502, Attempts: 3,
	Err: httpretry.NewStatusError(502, nil, "bad gateway")}

// TestEngineFailureRecorded: when the engine fails a rollout's calls, the
// rollout is the engine's infra failure naming the endpoint, whatever the
// agent did afterwards: relayed the 502 as its own error, or answered anyway.
func TestEngineFailureRecorded(t *testing.T) {
	for _, c := range []struct {
		name   string
		failed string
		handle func(w http.ResponseWriter, o offer)
	}{
		{"executor fails, the agent reports an error", RoleExecutor, nil},
		{"executor fails, the agent relays it as its own 500", RoleExecutor, func(w http.ResponseWriter, o offer) {
			if _, err := playAgent(o); err != nil {
				http.Error(w, "upstream: "+err.Error(), http.StatusInternalServerError)
				return
			}
			w.Write([]byte(`{"answer":"42"}`))
		}},
		{"every planner call fails, the agent answers anyway", RolePlanner, func(w http.ResponseWriter, o offer) {
			playAgent(o)
			w.Write([]byte(`{"answer":"42"}`))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, models := mustGateway(t, rollout.ModeMGRPO, Config{})
			models[c.failed].fail = engineDown
			g.cfg.AgentURL = pushAgent(t, c.handle)
			task, ft := testTask()
			tree := g.Run(context.Background(), task, ft)
			p := tree.Planner
			if p.FailureKind != failure.KindInfra || p.FailureCause != failure.CauseEngine5xx || !strings.Contains(p.Error, "engine-7:8000") {
				t.Errorf("planner error %q kind %q cause %q, want infra engine_5xx naming the endpoint", p.Error, p.FailureKind, p.FailureCause)
			}
			if c.failed == RoleExecutor && (len(tree.Executors) == 0 || tree.Executors[0].FailureKind != failure.KindInfra || tree.Executors[0].Error == "") {
				t.Errorf("executors %+v, want the failed engine call recorded as infra", tree.Executors)
			}
		})
	}
}

// TestContextOverflowIsTheAgents: a prompt the engine refuses as over the
// context window is answered 400 context_length_exceeded in OpenAI's shape
// and recorded as the trajectory's own failure (trained with reward 0),
// never as infra.
func TestContextOverflowIsTheAgents(t *testing.T) {
	g, models := mustGateway(t, rollout.ModeMGRPO, Config{})
	models[RoleExecutor].fail = &llm.GiveUpError{Endpoint: "http://engine-7:8000/v1", Status: 400, Attempts: 1,
		Err: httpretry.NewStatusError(400, nil, "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens")}
	var status int
	var body map[string]any
	g.cfg.AgentURL = pushAgent(t, func(w http.ResponseWriter, o offer) {
		status, body = post(t, o.BaseURLs[RoleExecutor]+"/chat/completions",
			map[string]any{"messages": []map[string]any{{"role": "user", "content": "a very long prompt"}}})
		playAgent(o)
		w.Write([]byte(`{"answer":"42"}`))
	})
	task, ft := testTask()
	tree := g.Run(context.Background(), task, ft)
	if status != http.StatusBadRequest || errorCode(t, body) != "context_length_exceeded" {
		t.Errorf("an over-long prompt was answered %d %v, want 400 context_length_exceeded", status, body)
	}
	if p := tree.Planner; p.FailureKind == failure.KindInfra {
		t.Errorf("planner %q %q: an agent's over-long prompt made the rollout infra", p.FailureKind, p.Error)
	}
	if len(tree.Executors) == 0 {
		t.Fatal("no executor trajectory")
	}
	e := tree.Executors[0]
	if e.FailureKind != failure.KindModel || e.FailureCause != failure.CauseContextLength || e.FormatOK {
		t.Errorf("executor kind %q cause %q format_ok %v, want a model failure context_length, format invalid", e.FailureKind, e.FailureCause, e.FormatOK)
	}
}

func TestPullAgent(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{PollWait: 2 * time.Second})
	task, ft := testTask()
	done := make(chan *agents.Rollout, 1)
	go func() { done <- g.Run(context.Background(), task, ft) }()
	var o offer
	for o.RolloutID == "" {
		resp, err := http.Get(g.URL() + "/v1/tasks/next?wait=1")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK {
			json.NewDecoder(resp.Body).Decode(&o)
		}
		resp.Body.Close()
	}
	if o.LeaseSeconds <= 0 || o.Seed != task.Seed || o.Task.Question != ft.Question {
		t.Errorf("offer %+v: want a lease, the task's seed and question", o)
	}
	answer, err := playAgent(o)
	if err != nil {
		t.Fatal(err)
	}
	if o.Mode != ModePull || !strings.HasPrefix(o.ResultURL, g.URL()+"/v1/tasks/"+o.RolloutID+".") || !strings.HasSuffix(o.HeartbeatURL, "/heartbeat") {
		t.Errorf("offer %+v: want mode pull and result and heartbeat URLs that carry the rollout's capability", o)
	}
	// Another agent that knows only the rollout's id cannot answer for it.
	if status, body := post(t, g.URL()+"/v1/tasks/"+o.RolloutID+"/result", map[string]any{"answer": "stolen"}); status != 403 {
		t.Errorf("a result without the secret: %d %v, want 403", status, body)
	}
	if status, body := post(t, o.HeartbeatURL, map[string]any{}); status != 200 {
		t.Errorf("heartbeat: %d %v", status, body)
	}
	if status, body := post(t, o.ResultURL, map[string]any{"answer": answer}); status != 200 {
		t.Fatalf("result: %d %v", status, body)
	}
	tree := <-done
	if tree.Answer != "42" || len(tree.Executors) != 2 || tree.Planner.Error != "" {
		t.Errorf("pulled rollout: answer %q, %d executors, error %q", tree.Answer, len(tree.Executors), tree.Planner.Error)
	}
	resp, err := http.Get(g.URL() + "/v1/tasks/next?wait=0")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("next with nothing waiting: %d, want 204", resp.StatusCode)
	}
}

func TestPullLeaseExpires(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{Lease: 200 * time.Millisecond})
	task, ft := testTask()
	done := make(chan *agents.Rollout, 1)
	go func() { done <- g.Run(context.Background(), task, ft) }()
	resp, err := http.Get(g.URL() + "/v1/tasks/next")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The agent took the task and died.
	infra(t, <-done, "lease")
}

func TestStreamedChat(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{})
	o, release, done := startHeld(t, g)
	defer func() { close(release); <-done }()
	body := `{"model":"x","stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"delegate"}}],"messages":[{"role":"user","content":"q"}]}`
	resp, err := http.Post(o.BaseURLs[RolePlanner]+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	var names []string
	var finish string
	sawUsage, sawDone := false, false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			sawDone = true
			continue
		}
		var ch chatChunk
		if err := json.Unmarshal([]byte(line), &ch); err != nil {
			t.Fatalf("chunk %s: %v", line, err)
		}
		if ch.Usage != nil && ch.Usage.TotalTokens > 0 {
			sawUsage = true
		}
		for _, c := range ch.Choices {
			for _, tc := range c.Delta.ToolCalls {
				names = append(names, tc.Function.Name)
			}
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
	}
	if len(names) != 2 || finish != "tool_calls" || !sawUsage || !sawDone {
		t.Errorf("stream: tool calls %v finish %q usage %v done %v", names, finish, sawUsage, sawDone)
	}
}

func TestTrajectoryHeaderAndMaxTokens(t *testing.T) {
	g, models := mustGateway(t, rollout.ModeMGRPO, Config{MaxTokens: map[string]int{RoleExecutor: 100}})
	o, release, done := startHeld(t, g)
	base := o.BaseURLs[RoleExecutor]
	for i, name := range []string{"a", "b", "a"} {
		msgs := []map[string]any{{"role": "user", "content": "task " + string(rune('0'+i))}}
		if status, body := post(t, base+"/chat/completions", map[string]any{"messages": msgs, "max_tokens": 500}, TrajectoryHeader, name); status != 200 {
			t.Fatalf("call %d: %d %v", i, status, body)
		}
	}
	post(t, o.BaseURLs[RolePlanner]+"/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "q"}}})
	close(release)
	tree := <-done
	if len(tree.Executors) != 2 || len(tree.Executors[0].Turns) != 2 {
		t.Errorf("named trajectories: %d executors, the first with %d turns; want 2 and 2", len(tree.Executors), len(tree.Executors[0].Turns))
	}
	for _, r := range models[RoleExecutor].requests() {
		if r.Sampling.MaxTokens != 100 {
			t.Errorf("max tokens %d, want the run's cap 100", r.Sampling.MaxTokens)
		}
	}
}

func TestBearerToken(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{Token: "s3cret"})
	status, body := post(t, g.URL()+"/v1/tasks/x/result", map[string]any{"answer": "x"})
	if status != 401 || errorCode(t, body) != "invalid_api_key" {
		t.Errorf("no token: %d %v, want 401", status, body)
	}
	status, _ = post(t, g.URL()+"/v1/tasks/x/result", map[string]any{"answer": "x"}, "Authorization", "Bearer s3cret")
	if status != 404 {
		t.Errorf("with the token: %d, want 404 (no such rollout)", status)
	}
}

func TestSlowClients(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{})
	httpservetest.CheckSlowClients(t, g.Addr(), "/r/x/planner/v1/models", "/r/x/planner/v1/chat/completions", 300*time.Millisecond)
}
