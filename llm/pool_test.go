package llm

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSimPoolStickinessAndEjection runs trajectories over three endpoints
// and kills one mid-run: every call succeeds, each trajectory stays on one
// endpoint until its endpoint dies and then on exactly one other, and the
// dead endpoint is ejected.
func TestSimPoolStickinessAndEjection(t *testing.T) {
	var servers []*simServer
	var urls []string
	for i := range 3 {
		s := mustSim(t, simConfig(DialectVLLM, uint64(20+i)), nil)
		servers = append(servers, s)
		urls = append(urls, s.ts.URL)
	}
	c := mustClient(t, Config{Role: "executor", Dialect: DialectVLLM, Endpoints: urls, CaptureTokens: true, Pool: PoolConfig{EjectAfter: 2, ProbeInterval: 20 * time.Millisecond}})
	c.dialect.(*vllmDialect).mode.Store(vllmModern)
	w := mustWorld(t)
	const n = 12
	var (
		mu        sync.Mutex
		endpoints = make([][]string, n)
		wg        sync.WaitGroup
		killOnce  sync.Once
		turnsDone int
	)
	killed := urls[1]
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("traj-%d", i)
			msgs := userMsg(w.Questions[i].Question)
			for k := range 6 {
				tr, err := c.Chat(context.Background(), Request{Messages: msgs, Tools: executorTools(), TrajectoryKey: key, Sampling: &Sampling{Seed: ptr(int64(k))}})
				if err != nil {
					t.Errorf("%s turn %d: %v", key, k, err)
					return
				}
				msgs = append(msgs, tr.Message)
				for _, call := range tr.ToolCalls {
					msgs = append(msgs, toolMsg(runTool(w, call), call.ID))
				}
				if len(tr.ToolCalls) == 0 {
					msgs = append(msgs, userMsg("Continue.")...)
				}
				mu.Lock()
				endpoints[i] = append(endpoints[i], tr.Endpoint)
				turnsDone++
				kill := turnsDone == n*2
				mu.Unlock()
				if kill {
					killOnce.Do(func() {
						servers[1].sim.Close()
						servers[1].ts.CloseClientConnections()
						servers[1].ts.Close()
					})
				}
			}
		}()
	}
	wg.Wait()
	usedKilled := 0
	for i, eps := range endpoints {
		switches := 0
		for k := 1; k < len(eps); k++ {
			if eps[k] != eps[k-1] {
				switches++
				if eps[k-1] != killed {
					t.Errorf("trajectory %d moved off healthy %s: %v", i, eps[k-1], eps)
				}
			}
		}
		if switches > 1 {
			t.Errorf("trajectory %d switched %d times: %v", i, switches, eps)
		}
		if len(eps) > 0 && eps[0] == killed {
			usedKilled++
		}
	}
	if usedKilled == 0 {
		t.Errorf("no trajectory was on the killed endpoint; the test proves nothing")
	}
	st := c.Pool().Status()
	if !st[1].Ejected {
		t.Errorf("killed endpoint not ejected: %+v", st[1])
	}
	if st[0].Ejected || st[2].Ejected {
		t.Errorf("healthy endpoint ejected: %+v", st)
	}
}

// TestPoolLeastOutstanding checks routing without keys spreads load.
func TestPoolLeastOutstanding(t *testing.T) {
	p, err := NewPool("r", []string{"http://a", "http://b", "http://c"}, PoolConfig{ProbeInterval: time.Hour}, nil, discardLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	count := map[int]int{}
	for range 9 {
		count[p.pick("", -1).idx]++
	}
	for i := range 3 {
		if count[i] != 3 {
			t.Errorf("endpoint %d got %d of 9 picks", i, count[i])
		}
	}
	// Stickiness beats load; ejection overrides stickiness.
	first := p.pick("k", -1)
	for range 5 {
		if got := p.pick("k", -1); got != first {
			t.Fatalf("sticky key moved from %d to %d", first.idx, got.idx)
		}
	}
	for range 3 {
		p.report(first, false)
	}
	if got := p.pick("k", -1); got == first {
		t.Fatalf("ejected endpoint still picked")
	}
	// An answer whose attempt began before the failures says nothing
	// about the endpoint now; one that began after them re-admits it.
	stale := p.epoch(first) - 1
	p.reportAttempt(first, true, stale)
	if st := p.Status()[first.idx]; !st.Ejected {
		t.Errorf("a success that predates the failures re-admitted: %+v", st)
	}
	p.report(first, true)
	if st := p.Status()[first.idx]; st.Ejected || st.Failures != 0 {
		t.Errorf("success did not re-admit: %+v", st)
	}
	// A trajectory whose endpoint just failed it moves home for good.
	p.report(first, false)
	moved := p.pick("k", first.idx)
	if moved == first {
		t.Fatalf("pick returned the endpoint to avoid")
	}
	if again := p.pick("k", -1); again != moved {
		t.Errorf("after failing over to %d the key went to %d", moved.idx, again.idx)
	}
}

func TestParseWaiting(t *testing.T) {
	text := "# HELP x\nvllm:num_requests_waiting{model_name=\"m\"} 7.0\nvllm:num_requests_running{model_name=\"m\"} 3\nsglang:num_queue_reqs 2\n"
	n, ok := parseWaiting(bufio.NewScanner(strings.NewReader(text)))
	if !ok || n != 9 {
		t.Errorf("parseWaiting = %d, %v; want 9, true", n, ok)
	}
}

func TestSimHealthProbeReadmits(t *testing.T) {
	s := mustSim(t, simConfig(DialectVLLM, 1), nil)
	c := mustClient(t, Config{Dialect: DialectVLLM, Endpoints: []string{s.ts.URL}, Pool: PoolConfig{ProbeInterval: 10 * time.Millisecond, QueueWeighting: true}})
	e := c.pool.eps[0]
	for range 3 {
		c.pool.report(e, false)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.pool.isEjected(e) {
		if time.Now().After(deadline) {
			t.Fatal("endpoint not re-admitted by the /health probe")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
