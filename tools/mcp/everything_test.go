package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/tools"
	"github.com/mgrpo/mgrpo/tools/cache"
)

// everythingScript returns the entry point of the pinned
// @modelcontextprotocol/server-everything (testdata/npm, installed by
// .ci/run with npm ci), skipping the test when it is not installed.
func everythingScript(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("testdata/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skip("server-everything is not installed: run `npm ci` in tools/mcp/testdata/npm (.ci/run does)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH")
	}
	return p
}

func nodeEnv() []string { return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")} }

// stdioEverything configures server-everything over stdio.
func stdioEverything(t *testing.T) ServerConfig {
	return ServerConfig{Name: "every", Command: "node", Args: []string{everythingScript(t), "stdio"}, Env: nodeEnv()}
}

// httpEverything starts server-everything's Streamable HTTP transport on a
// free port of the test's range and returns its configuration.
func httpEverything(t *testing.T) ServerConfig {
	t.Helper()
	return startHTTPEverything(t, freePort(t)).cfg
}

// httpServer is one run of server-everything over Streamable HTTP, as a
// process of its own that the test can kill.
type httpServer struct {
	cfg ServerConfig
	cmd *exec.Cmd
}

// startHTTPEverything starts server-everything's Streamable HTTP transport
// on port and waits until it listens; the test's cleanup kills it.
func startHTTPEverything(t *testing.T, port int) *httpServer {
	t.Helper()
	script := everythingScript(t)
	cmd := exec.Command("node", script, "streamableHttp")
	cmd.Env = append(nodeEnv(), fmt.Sprintf("PORT=%d", port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &httpServer{cmd: cmd, cfg: ServerConfig{Name: "every", URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)}}
	t.Cleanup(h.kill)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything streamableHttp did not listen on %d: %s", port, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return h
}

// kill ends the server's process group at once, as a crash would, and
// waits for it. It is idempotent.
func (h *httpServer) kill() {
	_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	_ = h.cmd.Wait()
}

// freePort returns a free loopback port of the range this package's tests
// use: 18500-18549, or MGRPO_TEST_MCP_PORTS ("LO-HI") when set, so that
// runs beside CI on one machine can keep to their own ports.
func freePort(t *testing.T) int {
	t.Helper()
	lo, hi := 18500, 18549
	if r := os.Getenv("MGRPO_TEST_MCP_PORTS"); r != "" {
		if _, err := fmt.Sscanf(r, "%d-%d", &lo, &hi); err != nil || lo > hi {
			t.Fatalf("MGRPO_TEST_MCP_PORTS=%q: want LO-HI", r)
		}
	}
	for p := lo; p <= hi; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			l.Close()
			return p
		}
	}
	t.Fatalf("no free port in %d-%d", lo, hi)
	return 0
}

func openSet(t *testing.T, cfg Config) *Set {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func registry(t *testing.T, s *Set) *tools.Registry {
	t.Helper()
	reg, err := tools.NewRegistry(s.Tools())
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	return reg
}

func TestEverything(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*testing.T) ServerConfig
	}{{"stdio", stdioEverything}, {"streamable-http", httpEverything}} {
		t.Run(tc.name, func(t *testing.T) {
			sc := tc.cfg(t)
			sc.PerTool = map[string]ToolPolicy{"trigger-long-running-operation": {Timeout: 500 * time.Millisecond}}
			s := openSet(t, Config{Servers: []ServerConfig{sc}, Reserved: []string{"search", "visit"}})
			promReg := prometheus.NewRegistry()
			metrics := tools.NewMetrics(promReg)
			reg, err := tools.NewRegistry(s.Tools(), tools.WithMetrics(metrics))
			if err != nil {
				t.Fatal(err)
			}
			names := reg.Names()
			for _, want := range []string{"echo", "get-sum", "trigger-long-running-operation"} {
				if !contains(names, want) {
					t.Fatalf("tools %v: no %s", names, want)
				}
			}
			for _, spec := range reg.Specs() {
				if spec.Name == "get-sum" && (!strings.Contains(string(spec.Parameters), `"a"`) || spec.Description == "") {
					t.Errorf("get-sum spec = %+v, want the server's description and schema", spec)
				}
			}
			ctx := context.Background()

			obs := reg.Call(ctx, "get-sum", json.RawMessage(`{"a": 2, "b": 40}`))
			if obs.Meta.Class != failure.ClassOK || !strings.Contains(obs.Text, "42") {
				t.Errorf("get-sum = %q (%s %s), want 42", obs.Text, obs.Meta.Class, obs.Meta.Error)
			}
			if obs.Meta.Provider != "mcp:every" || obs.Meta.Upstream != 1 {
				t.Errorf("meta = %+v, want provider mcp:every, 1 upstream", obs.Meta)
			}

			// The registry validates against the listed schema before any call.
			obs = reg.Call(ctx, "get-sum", json.RawMessage(`{"a": "two"}`))
			if obs.Meta.Class != failure.ClassInvalidArgs || obs.Meta.Upstream != 0 {
				t.Errorf("bad args: %q (%s, upstream %d), want invalid_args before the call", obs.Text, obs.Meta.Class, obs.Meta.Upstream)
			}

			// An error result (the server's own validation, reached by calling
			// the tool past the registry) is an error observation.
			var sum tools.Tool
			for _, tl := range s.Tools() {
				if tl.Spec().Name == "get-sum" {
					sum = tl
				}
			}
			obs = sum.Call(ctx, json.RawMessage(`{"a": "two"}`))
			if obs.Meta.Class != failure.ClassToolError || !strings.Contains(obs.Text, "reported an error") {
				t.Errorf("server-side error: %q (%s), want a tool_error observation", obs.Text, obs.Meta.Class)
			}

			// A slow tool is cancelled at its timeout, and the session goes on.
			obs = reg.Call(ctx, "trigger-long-running-operation", json.RawMessage(`{"duration": 30, "steps": 3}`))
			if obs.Meta.Class != failure.ClassTimeout {
				t.Errorf("slow tool = %q (%s), want timeout", obs.Text, obs.Meta.Class)
			}
			if obs.Meta.Latency > 20*time.Second {
				t.Errorf("slow tool took %v: not cut at its timeout", obs.Meta.Latency)
			}
			obs = reg.Call(ctx, "echo", json.RawMessage(`{"message": "after the timeout"}`))
			if obs.Meta.Class != failure.ClassOK || !strings.Contains(obs.Text, "after the timeout") {
				t.Errorf("echo after timeout = %q (%s %s)", obs.Text, obs.Meta.Class, obs.Meta.Error)
			}
			// The calls are in mgrpo_tool_* by tool and server.
			// (Arguments the registry refuses never reach the server: no provider.)
			for _, c := range []struct {
				tool, provider, class string
			}{{"get-sum", "mcp:every", "ok"}, {"get-sum", "", "invalid_args"}, {"trigger-long-running-operation", "mcp:every", "timeout"}, {"echo", "mcp:every", "ok"}} {
				if got := callCount(t, promReg, c.tool, c.provider, c.class); got != 1 {
					t.Errorf("mgrpo_tool_calls_total{tool=%s,provider=%s,class=%s} = %v, want 1", c.tool, c.provider, c.class, got)
				}
			}
		})
	}
}

// TestEverythingRestart kills the stdio server mid-run: the call in flight
// fails as a network outage, the next call starts the server again.
func TestEverythingRestart(t *testing.T) {
	s := openSet(t, Config{Servers: []ServerConfig{stdioEverything(t)}})
	reg := registry(t, s)
	ctx := context.Background()
	done := make(chan tools.Observation)
	go func() {
		done <- reg.Call(ctx, "trigger-long-running-operation", json.RawMessage(`{"duration": 20, "steps": 2}`))
	}()
	time.Sleep(300 * time.Millisecond) // let the call reach the server
	if !s.servers[0].kill() {
		t.Fatal("no process to kill")
	}
	obs := <-done
	if obs.Meta.Class != failure.ClassNetwork {
		t.Errorf("call in flight at the kill = %q (%s %s), want network", obs.Text, obs.Meta.Class, obs.Meta.Error)
	}
	var got tools.Observation
	deadline := time.Now().Add(30 * time.Second)
	for {
		got = reg.Call(ctx, "echo", json.RawMessage(`{"message": "again"}`))
		if got.Meta.Class == failure.ClassOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got.Meta.Class != failure.ClassOK || !strings.Contains(got.Text, "again") {
		t.Fatalf("echo after restart = %q (%s %s)", got.Text, got.Meta.Class, got.Meta.Error)
	}
	if n := s.Starts("every"); n < 2 {
		t.Errorf("starts = %d, want a restart", n)
	}
}

// TestEverythingRestartHTTP kills server-everything over Streamable HTTP
// mid-run, a separate process on a port of the test's: the call in flight
// is an outage (network), the calls while it is down fail as outages well
// before their timeout instead of hanging, and once it listens again on
// the same port the next call works on a session the Set initialised anew.
func TestEverythingRestartHTTP(t *testing.T) {
	port := freePort(t)
	h := startHTTPEverything(t, port)
	sc := h.cfg
	const timeout = 20 * time.Second
	sc.Policy = ToolPolicy{Timeout: timeout}
	s := openSet(t, Config{Servers: []ServerConfig{sc}})
	reg := registry(t, s)
	ctx := context.Background()
	if obs := reg.Call(ctx, "echo", json.RawMessage(`{"message": "before"}`)); obs.Meta.Class != failure.ClassOK {
		t.Fatalf("echo before the kill = %q (%s %s)", obs.Text, obs.Meta.Class, obs.Meta.Error)
	}
	done := make(chan tools.Observation)
	go func() {
		done <- reg.Call(ctx, "trigger-long-running-operation", json.RawMessage(`{"duration": 15, "steps": 3}`))
	}()
	time.Sleep(500 * time.Millisecond) // let the call reach the server
	h.kill()
	obs := <-done
	if obs.Meta.Class != failure.ClassNetwork {
		t.Errorf("call in flight at the kill = %q (%s %s), want network", obs.Text, obs.Meta.Class, obs.Meta.Error)
	}
	// While the server is down, calls are outages and none waits for its
	// timeout; the tool source tries to start a session again, waiting out
	// the backoff before every start after the first (a lower bound on the
	// calls' time, safe on a loaded machine).
	var waited time.Duration
	for i := 0; i < 3; i++ {
		obs := reg.Call(ctx, "echo", json.RawMessage(`{"message": "down"}`))
		if obs.Meta.Class != failure.ClassNetwork {
			t.Errorf("call %d while down = %q (%s %s), want network", i, obs.Text, obs.Meta.Class, obs.Meta.Error)
		}
		if obs.Meta.Latency >= timeout/2 {
			t.Errorf("call %d while down took %v: it hung toward its %v timeout", i, obs.Meta.Latency, timeout)
		}
		waited += obs.Meta.Latency
	}
	srv := s.servers[0]
	srv.mu.Lock()
	fails := srv.fails
	srv.mu.Unlock()
	var backoff time.Duration
	for k := 2; k <= fails; k++ {
		backoff += baseBackoff << (k - 2)
	}
	if fails < 1 || waited < backoff {
		t.Errorf("while down: %d failed starts, calls took %v in all; want a start tried, and at least the %v of backoff", fails, waited, backoff)
	}
	startHTTPEverything(t, port)
	var got tools.Observation
	deadline := time.Now().Add(60 * time.Second)
	for {
		got = reg.Call(ctx, "echo", json.RawMessage(`{"message": "again"}`))
		if got.Meta.Class == failure.ClassOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got.Meta.Class != failure.ClassOK || !strings.Contains(got.Text, "again") {
		t.Fatalf("echo after the restart = %q (%s %s)", got.Text, got.Meta.Class, got.Meta.Error)
	}
	if n := s.Starts("every"); n < 2 {
		t.Errorf("sessions started = %d, want a new one after the restart", n)
	}
}

// callCount reads mgrpo_tool_calls_total{tool, provider, class} from reg.
func callCount(t *testing.T, reg *prometheus.Registry, tool, provider, class string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "mgrpo_tool_calls_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["tool"] == tool && labels["provider"] == provider && labels["class"] == class {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestEverythingCacheAndCap checks the call policy: a tool allowed to be
// cached answers the second identical call (keys in another order) from
// the cache without reaching the server; one that is not, never; and a
// concurrency cap of 1 makes a second call wait for the first.
func TestEverythingCacheAndCap(t *testing.T) {
	sc := stdioEverything(t)
	yes := true
	sc.PerTool = map[string]ToolPolicy{"get-sum": {Cache: &yes}, "trigger-long-running-operation": {Concurrency: 1, Timeout: 20 * time.Second}}
	s := openSet(t, Config{Servers: []ServerConfig{sc}, Cache: cache.NewLRU(100, time.Hour)})
	reg := registry(t, s)
	ctx := context.Background()
	first := reg.Call(ctx, "get-sum", json.RawMessage(`{"a": 1, "b": 2}`))
	second := reg.Call(ctx, "get-sum", json.RawMessage(`{"b": 2, "a": 1}`))
	if first.Meta.CacheHit || first.Meta.Upstream != 1 || !second.Meta.CacheHit || second.Meta.Upstream != 0 || second.Text != first.Text {
		t.Errorf("cached tool: first %+v, second %+v; want a miss then a hit with the same text", first.Meta, second.Meta)
	}
	for i := 0; i < 2; i++ {
		if obs := reg.Call(ctx, "echo", json.RawMessage(`{"message": "x"}`)); obs.Meta.CacheHit || obs.Meta.Upstream != 1 {
			t.Errorf("uncached tool call %d: %+v, want it to reach the server", i, obs.Meta)
		}
	}
	// Two slow calls with a cap of 1 take about twice one call.
	start := time.Now()
	done := make(chan tools.Observation, 2)
	for i := 0; i < 2; i++ {
		go func() {
			done <- reg.Call(ctx, "trigger-long-running-operation", json.RawMessage(`{"duration": 1, "steps": 1}`))
		}()
	}
	for i := 0; i < 2; i++ {
		if obs := <-done; obs.Meta.Class != failure.ClassOK {
			t.Errorf("slow call: %q (%s %s)", obs.Text, obs.Meta.Class, obs.Meta.Error)
		}
	}
	if el := time.Since(start); el < 2*time.Second {
		t.Errorf("two 1 s calls under a cap of 1 took %v: they ran at once", el)
	}
}
