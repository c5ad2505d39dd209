package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/rollout"
)

// TestPushedRolloutRefusesPullRoutes: a pushed rollout's result is the
// push's answer, so the pull routes refuse it with 409 naming the mode, and
// a heartbeat does not start a lease that would later kill the rollout.
func TestPushedRolloutRefusesPullRoutes(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{Lease: 200 * time.Millisecond})
	type answer struct {
		status int
		body   map[string]any
	}
	refused := make(chan [2]answer, 1)
	g.cfg.AgentURL = pushAgent(t, func(w http.ResponseWriter, o offer) {
		handle := handleOf(g, o)
		hs, hb := post(t, g.URL()+"/v1/tasks/"+handle+"/heartbeat", map[string]any{})
		rs, rb := post(t, g.URL()+"/v1/tasks/"+handle+"/result", map[string]any{"answer": "injected"})
		refused <- [2]answer{{hs, hb}, {rs, rb}}
		// Outlive the lease a heartbeat would have started: the rollout
		// must still be the agent's.
		time.Sleep(4 * g.cfg.Lease)
		a, err := playAgent(o)
		if err != nil {
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"answer": a})
	})
	task, ft := testTask()
	scoring := farm.Scoring{Mode: rollout.ModeMGRPO, Weights: rollout.DefaultRewardWeights(), Scorer: exact{}, ExpertFallback: rollout.DefaultExpertFallback}
	res := farm.Execute(context.Background(), g, scoring, task, ft)
	got := <-refused
	for i, route := range []string{"heartbeat", "result"} {
		if got[i].status != http.StatusConflict || errorCode(t, got[i].body) != "wrong_mode" {
			t.Errorf("%s on a pushed rollout: %d %v, want 409 wrong_mode", route, got[i].status, got[i].body)
		}
		if msg, _ := got[i].body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "mode push") {
			t.Errorf("%s refusal %q does not name the mode", route, msg)
		}
	}
	if res.Error != "" || res.Tree.Answer != "42" {
		t.Fatalf("rollout: error %q answer %q, want the agent's own answer 42 (the injected result refused, no lease)", res.Error, res.Tree.Answer)
	}
}

// handleOf is the capability path segment of offer o ("ID.SECRET").
func handleOf(g *Gateway, o offer) string {
	for role, u := range o.BaseURLs {
		return strings.TrimSuffix(strings.TrimPrefix(u, g.URL()+"/r/"), "/"+role+"/v1")
	}
	return ""
}

// engineCalls counts the calls a fake model received.
func engineCalls(m *fakeModel) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.reqs) + len(m.raws)
}

// TestCapabilityGuardsEveryRoute: a call that names a live rollout by its
// id alone, or with another rollout's secret, is refused with 403 and never
// reaches the engine.
func TestCapabilityGuardsEveryRoute(t *testing.T) {
	g, models := mustGateway(t, rollout.ModeMGRPO, Config{})
	offers, release := make(chan offer, 2), make(chan struct{})
	g.cfg.AgentURL = pushAgent(t, func(w http.ResponseWriter, o offer) {
		offers <- o
		<-release
		json.NewEncoder(w).Encode(map[string]any{"answer": "<answer>x</answer>"})
	})
	done := make(chan struct{}, 2)
	for range 2 {
		task, ft := testTask()
		go func() { g.Run(context.Background(), task, ft); done <- struct{}{} }()
	}
	a, b := <-offers, <-offers
	if a.RolloutID == b.RolloutID || handleOf(g, a) == handleOf(g, b) {
		t.Fatalf("two rollouts share a capability: %v %v", a.BaseURLs, b.BaseURLs)
	}
	_, secretB, _ := strings.Cut(handleOf(g, b), ".")
	chat := map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": "hi"}}}
	before := engineCalls(models[RolePlanner])
	for _, url := range []string{
		g.URL() + "/r/" + a.RolloutID + "/planner/v1/chat/completions",
		g.URL() + "/r/" + a.RolloutID + "." + secretB + "/planner/v1/chat/completions",
		g.URL() + "/r/" + a.RolloutID + "." + secretB + "/planner/v1/completions",
		g.URL() + "/v1/tasks/" + a.RolloutID + "." + secretB + "/heartbeat",
	} {
		if status, body := post(t, url, chat); status != http.StatusForbidden || errorCode(t, body) != "wrong_rollout_secret" {
			t.Errorf("POST %s: %d %v, want 403 wrong_rollout_secret", url, status, body)
		}
	}
	resp, err := http.Get(g.URL() + "/r/" + a.RolloutID + "/planner/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("models without the secret: %d, want 403", resp.StatusCode)
	}
	if got := engineCalls(models[RolePlanner]); got != before {
		t.Errorf("refused calls reached the engine: %d calls, want %d", got, before)
	}
	// The rightful call still works.
	if status, body := post(t, a.BaseURLs[RolePlanner]+"/chat/completions", chat); status != http.StatusOK {
		t.Errorf("the rollout's own call: %d %v", status, body)
	}
	close(release)
	<-done
	<-done
}

// TestSlowBodyIs408: a body that does not arrive within the body timeout
// is answered 408 (the client was slow), not 400 (a malformed request).
func TestSlowBodyIs408(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{})
	o, release, done := startHeld(t, g)
	defer func() { close(release); <-done }()
	conn, err := net.Dial("tcp", g.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	path := strings.TrimPrefix(o.BaseURLs[RolePlanner], g.URL()) + "/chat/completions"
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{", path, g.Addr())
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("no answer to a slow body: %v", err)
	}
	if !strings.Contains(status, " 408 ") {
		t.Errorf("a slow body was answered %q, want 408", strings.TrimSpace(status))
	}
}
