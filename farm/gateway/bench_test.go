package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/farm/gateway/gatewaytest"
	"github.com/mgrpo/mgrpo/internal/benchproc"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/web"
	"github.com/mgrpo/mgrpo/tools"
	"github.com/mgrpo/mgrpo/tools/search"
)

// benchChildEnv makes TestBenchChild serve; without it the test skips.
const benchChildEnv = "MGRPO_GATEWAY_BENCH_CHILD"

// benchWorldSeed is the synthetic web both sides of the benchmark play.
const benchWorldSeed = 11

// TestBenchChild is the benchmark's other process: the sim's inference
// server and web at zero latency, and a push agent service (a planner whose
// delegate tool runs executor conversations on the sim web, written to the
// wire contract), so that the benchmark's process CPU is the farm's alone.
// The same agent is served three times, once per API the gateway speaks:
// Chat Completions (AGENT), Responses (RESPONSES) and Messages (MESSAGES).
// It prints "child LLM WEB AGENT RESPONSES MESSAGES" and serves until its
// stdin closes.
func TestBenchChild(t *testing.T) {
	if os.Getenv(benchChildEnv) == "" {
		t.Skip("the gateway benchmark's child process")
	}
	world, err := web.Generate(web.Config{Seed: benchWorldSeed})
	if err != nil {
		t.Fatal(err)
	}
	cfg := simllm.DefaultConfig()
	if d := benchLatency(); d > 0 {
		// BenchmarkGatewayLatency: every call takes d, and the server
		// generates any number of sequences at once, so the ideal latency
		// is exact.
		cfg.TTFT, cfg.Slots = d, 1<<20
	}
	srv, err := simllm.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	serve := func(h http.Handler) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go http.Serve(ln, h)
		return "http://" + ln.Addr().String()
	}
	llmURL, webURL := serve(srv.Handler()), serve(world.Handler())
	agent := func(converse benchConverser) string {
		return serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var o offer
			if err := json.NewDecoder(r.Body).Decode(&o); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			answer, err := benchAgent(o, webURL, converse)
			if err != nil {
				json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
				return
			}
			json.NewEncoder(w).Encode(map[string]string{"answer": answer})
		}))
	}
	fmt.Printf("child %s %s %s %s %s\n", llmURL, webURL, agent(gatewaytest.Converse), agent(gatewaytest.ConverseResponses), agent(gatewaytest.ConverseMessages))
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// benchClient is the agent's HTTP client: enough idle connections for the
// benchmarks' concurrency (BenchmarkGatewayLatency's 1,000 rollouts hold a
// push each and call in parallel).
var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096}}

// benchConverser is one API's conversation loop of gatewaytest.
type benchConverser func(*http.Client, string, gatewaytest.Conversation, func(gatewaytest.Call) string) (string, error)

// benchAgent plays one rollout on converse's API: the planner's
// conversation, each delegation an executor conversation with search and
// visit on the web.
func benchAgent(o offer, webURL string, converse benchConverser) (string, error) {
	delegate := []any{benchTool("delegate", "task", "string")}
	webTools := []any{benchTool("search", "query", "array"), benchTool("visit", "url", "array")}
	return benchConverse(converse, o.BaseURLs[RolePlanner], o.Task.Question, delegate, "", func(c gatewaytest.Call) string {
		task, _ := c.Args["task"].(string)
		report, err := benchConverse(converse, o.BaseURLs[RoleExecutor], task, webTools, c.ID, func(c gatewaytest.Call) string {
			return benchWeb(webURL, c.Name, c.Args)
		})
		if err != nil {
			return "The executor failed: " + err.Error()
		}
		return report
	})
}

func benchTool(name, arg, typ string) map[string]any {
	prop := map[string]any{"type": typ}
	if typ == "array" {
		prop["items"] = map[string]any{"type": "string"}
	}
	return map[string]any{"type": "function", "function": map[string]any{"name": name,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{arg: prop}}}}
}

// benchConverse runs one conversation of the benchmark's agent; an
// executor's names the planner's call that started it. Each answer may
// have as many tokens as the built-in agents' (agents.DefaultPlannerBudget's
// 2,048): without a cap the sim's default cuts answers short and the
// gateway side's rollouts would be shorter than the in-process side's.
func benchConverse(converse benchConverser, base, user string, tools []any, delegation string, run func(gatewaytest.Call) string) (string, error) {
	return converse(benchClient, base, gatewaytest.Conversation{System: "You are an agent.", User: user, Tools: tools, MaxTurns: 16,
		MaxTokens: agents.DefaultPlannerBudget().MaxTokensPerTurn, Delegation: delegation}, run)
}

var benchTag = regexp.MustCompile(`<[^>]+>`)

func benchWeb(webURL, name string, args map[string]any) string {
	var list []string
	key := map[string]string{"search": "query", "visit": "url"}[name]
	switch v := args[key].(type) {
	case string:
		list = []string{v}
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				list = append(list, s)
			}
		}
	}
	var parts []string
	for _, x := range list {
		var resp *http.Response
		var err error
		if name == "search" {
			body, _ := json.Marshal(map[string]string{"q": x})
			resp, err = benchClient.Post(webURL+"/search", "application/json", bytes.NewReader(body))
		} else {
			resp, err = benchClient.Get(x)
		}
		if err != nil {
			return err.Error()
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if name == "visit" {
			raw = []byte(strings.Join(strings.Fields(benchTag.ReplaceAllString(string(raw), " ")), " "))
		}
		parts = append(parts, string(raw))
	}
	return strings.Join(parts, "\n\n")
}

// BenchmarkGatewayVsInProcess runs the same sim tasks through the
// built-in agents (in-process) and through the gateway with a push agent in
// another process, on each API the gateway speaks (gateway: Chat
// Completions, gateway-responses, gateway-messages), and reports each side's farm CPU per model call (this
// process: the farm, the clients, and the agents' loop and tools or the
// gateway), the sim and the pushed agent excluded. The goal is
// gateway ≤ 1.3 × in-process. Each side's measured rollouts run once
// unmeasured first, so the in-process tools answer from their cache and
// neither side counts tool work. Allocations, goroutines started and the
// threads' context switches are reported per call beside the CPU.
func BenchmarkGatewayVsInProcess(b *testing.B) {
	line, _ := benchproc.Start(b, "TestBenchChild", []string{benchChildEnv + "=1"}, "child ")
	f := strings.Fields(line)
	llmURL, webURL := f[1], f[2]
	world, err := web.Generate(web.Config{Seed: benchWorldSeed, Questions: 64})
	if err != nil {
		b.Fatal(err)
	}
	tasks := make([]farm.Task, len(world.Questions))
	for i, q := range world.Questions {
		tasks[i] = farm.Task{ID: q.ID, Question: q.Question, Answer: q.Answer}
	}
	sides := benchSides(b, llmURL, webURL, map[string]string{"gateway": f[3], "gateway-responses": f[4], "gateway-messages": f[5]}, 0)
	scoring := farm.Scoring{Mode: rollout.ModeMGRPO, Weights: rollout.DefaultRewardWeights(), ExpertFallback: rollout.DefaultExpertFallback}
	const concurrency = 32
	for _, side := range sides {
		// pass runs rollouts 0 … n-1 (task i mod the tasks, seed i), 32 at a
		// time, and returns their model calls and failures.
		pass := func(n int) (calls, failed int) {
			var mu sync.Mutex
			sem := make(chan struct{}, concurrency)
			var wg sync.WaitGroup
			for i := range n {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					t := tasks[i%len(tasks)]
					task := rollout.RolloutTask{Run: "bench", Step: 1, QueryID: t.ID, K: i, Seed: int64(i)}
					res := farm.Execute(context.Background(), side.runner, scoring, task, t)
					n := len(res.Tree.Planner.Turns)
					for _, e := range res.Tree.Executors {
						n += len(e.Turns)
					}
					mu.Lock()
					calls += n
					if res.Error != "" {
						failed++
					}
					mu.Unlock()
				})
			}
			wg.Wait()
			return calls, failed
		}
		b.Run(side.name, func(b *testing.B) {
			// The same rollouts once unmeasured first: connections, pools
			// and the in-process tools' cache, which then answers every
			// search and visit of the measured pass (the same seeds ask the
			// same), so that neither side counts tool work. A warm-up over
			// other seeds would leave the in-process side's first measured
			// pass fetching pages its cache never saw.
			pass(b.N)
			cpu0, _ := benchproc.Usage(b)
			counts0 := benchproc.ReadCounts(b)
			b.ResetTimer()
			calls, failed := pass(b.N)
			b.StopTimer()
			cpu1, _ := benchproc.Usage(b)
			counts := benchproc.ReadCounts(b).Sub(counts0)
			if calls > 0 {
				b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(calls), "farm-cpu-µs/call")
				counts.Report(b, calls, "call")
				b.ReportMetric(float64(calls)/float64(b.N), "calls/rollout")
			}
			if failed > 0 {
				b.ReportMetric(float64(failed)/float64(b.N), "failed/rollout")
			}
			if side.name == "gateway" {
				// Requests the fast decoder left to encoding/json (0 expected).
				n := 0.0
				for _, c := range side.met.fallbackBy {
					n += testutil.ToFloat64(c)
				}
				b.ReportMetric(n, "decode-fallbacks")
			}
		})
	}
}

// benchSide is one side of a benchmark: the built-in agents in process, or
// a gateway in front of one of the child's push agents (met its metrics).
type benchSide struct {
	name   string
	runner farm.Runner
	met    *Metrics
}

// benchSides builds the sides on the child's sim (llmURL, webURL) and push
// agents (agentURLs, by side name): the built-in planner and executor with
// search and visit on the sim web first, then a listening gateway per
// agent, in name order; each side has its own vLLM clients with
// maxInFlight calls per endpoint (0: the client's default).
func benchSides(b *testing.B, llmURL, webURL string, agentURLs map[string]string, maxInFlight int64) []benchSide {
	temp := 1.0
	client := func(role string) *llm.Client {
		c, err := llm.New(llm.Config{Role: role, Dialect: llm.DialectVLLM, Model: simllm.DefaultModel, Endpoints: []string{llmURL},
			CaptureTokens: true, Sampling: llm.Sampling{Temperature: &temp}, Pool: llm.PoolConfig{MaxInFlightPerEndpoint: maxInFlight}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		return c
	}
	u, _ := url.Parse(webURL)
	box, err := tools.NewWebToolbox(tools.WebConfig{
		Search:     search.Config{Name: "serper", BaseURL: webURL, Getenv: func(string) string { return "sim-key" }},
		AllowHosts: []string{u.Host},
	})
	if err != nil {
		b.Fatal(err)
	}
	exec, err := agents.NewExecutor(agents.ExecutorConfig{Model: client("executor"), Tools: box, Budget: agents.DefaultExecutorBudget()})
	if err != nil {
		b.Fatal(err)
	}
	planner, err := agents.NewPlanner(agents.PlannerConfig{Model: client("planner"), Executor: exec,
		Budget: agents.DefaultPlannerBudget(), Rollout: agents.DefaultRolloutBudget()})
	if err != nil {
		b.Fatal(err)
	}
	sides := []benchSide{{name: "in-process", runner: &farm.AgentRunner{Planner: planner}}}
	for _, name := range slices.Sorted(maps.Keys(agentURLs)) {
		met := NewMetrics()
		g, err := New(Config{Mode: rollout.ModeMGRPO, AgentURL: agentURLs[name], HTTPClient: benchClient, Metrics: met,
			Models: map[string]agents.Model{RolePlanner: client("planner"), RoleExecutor: client("executor")}})
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Listen("127.0.0.1:0", Limits()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { g.Close() })
		sides = append(sides, benchSide{name: name, runner: g, met: met})
	}
	return sides
}
