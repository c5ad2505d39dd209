package llm

import (
	"context"
	"strings"
	"testing"
	"time"
)

// waitUntil polls cond until it holds or a generous deadline passes.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestKVModelAdmitAndPreempt(t *testing.T) {
	ctx := context.Background()
	e := newEngine(4, 1000, 100)
	a, err := e.admit(ctx, 40)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.admit(ctx, 40)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *ticket, 1)
	go func() {
		c, err := e.admit(ctx, 40)
		if err == nil {
			got <- c
		}
	}()
	waitUntil(t, "c queued", func() bool { return e.waiting.Load() == 1 })
	// a decodes 30 tokens: 110 > 100, so the newest (b) is preempted.
	e.kv.grow(a, 30)
	select {
	case <-b.preempt:
	default:
		t.Fatal("b not preempted with the cache over capacity")
	}
	if got, want := e.kvTokens.Load(), int64(70); got != want {
		t.Fatalf("kv tokens %d, want %d", got, want)
	}
	if e.preemptions() != 1 {
		t.Fatalf("preemptions %v, want 1", e.preemptions())
	}
	b.release()
	// 70 + 40 > 100: c still waits until a finishes.
	select {
	case <-got:
		t.Fatal("c admitted without KV room")
	case <-time.After(20 * time.Millisecond):
	}
	a.release()
	c := <-got
	if got, want := e.kvUsage(), 0.4; got != want {
		t.Fatalf("kv usage %v, want %v", got, want)
	}
	c.release()
	if e.running.Load() != 0 || e.kvTokens.Load() != 0 || len(e.kv.live) != 0 {
		t.Fatalf("after all releases: running %d, kv %d, live %d", e.running.Load(), e.kvTokens.Load(), len(e.kv.live))
	}
}

// TestKVModelDecodeRecomputes runs a sequence that outgrows the cache next
// to an older one: it is preempted once, waits for room, is readmitted with
// what it had generated and finishes.
func TestKVModelDecodeRecomputes(t *testing.T) {
	cfg := testConfig(DialectVLLM)
	cfg.KVCapacity = 30
	s, ts := MustServer(t, cfg)
	ctx := context.Background()
	a, err := s.eng.admit(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.eng.admit(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := s.decode(ctx, &b, 10, 20)
		b.release()
		done <- err
	}()
	waitUntil(t, "b preempted", func() bool { return s.eng.preemptions() == 1 })
	a.release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := s.eng.preemptions(); got != 1 {
		t.Fatalf("preemptions %v, want 1", got)
	}
	_, metrics := get(t, ts.URL+"/metrics")
	if want := `vllm:num_preemptions_total{model_name="sim-qwen3"} 1.0`; !strings.Contains(string(metrics), want) {
		t.Fatalf("metrics lack %q:\n%s", want, metrics)
	}
}

func TestKVModelOffByDefault(t *testing.T) {
	s, ts := MustServer(t, testConfig(DialectSGLang))
	if s.eng.kv != nil {
		t.Fatal("KV model on without KVCapacity")
	}
	_, metrics := get(t, ts.URL+"/metrics")
	if want := `sglang:num_retracted_requests_total{model_name="sim-qwen3"} 0.0`; !strings.Contains(string(metrics), want) {
		t.Fatalf("metrics lack %q:\n%s", want, metrics)
	}
}

// TestKVModelRecomputeCost preempts a sequence after it generated 17 tokens
// of 20: readmitted, it rebuilds the KV of its 10-token prompt and those 17
// tokens (TTFT plus RecomputePerToken each) before its last 3 tokens, so
// its decode ends no sooner than that recompute after the room was freed.
// Only a lower bound is asserted: a loaded machine makes it later, never
// sooner.
func TestKVModelRecomputeCost(t *testing.T) {
	cfg := testConfig(DialectVLLM)
	cfg.KVCapacity = 30
	cfg.TTFT = time.Millisecond
	cfg.RecomputePerToken = 10 * time.Millisecond
	s, _ := MustServer(t, cfg)
	if got, want := s.recomputeTime(27), 271*time.Millisecond; got != want {
		t.Fatalf("recomputeTime(27) = %v, want %v", got, want)
	}
	ctx := context.Background()
	a, err := s.eng.admit(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.eng.admit(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		// 10 + 10 + 1 + 8 = 29 fits; the next 8 make 37 > 30, so b, the
		// newest, is preempted holding 17 generated tokens, and 10 + 27 do
		// not fit until a finishes.
		err := s.decode(ctx, &b, 10, 20)
		b.release()
		done <- err
	}()
	waitUntil(t, "b preempted", func() bool { return s.eng.preemptions() == 1 })
	waitUntil(t, "b queued again", func() bool { return s.eng.waiting.Load() == 1 })
	freed := time.Now()
	a.release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, least := time.Since(freed), s.recomputeTime(27); got < least {
		t.Fatalf("decode ended %v after the room was freed, want at least the recompute of 27 tokens, %v", got, least)
	}
	if got := s.eng.preemptions(); got != 1 {
		t.Fatalf("preemptions %v, want 1", got)
	}
}

// TestKVModelRecomputeDefault keeps the recompute at one TTFT without
// RecomputePerToken, as before the cost model existed.
func TestKVModelRecomputeDefault(t *testing.T) {
	cfg := testConfig(DialectVLLM)
	cfg.KVCapacity = 30
	cfg.TTFT = 20 * time.Millisecond
	s, _ := MustServer(t, cfg)
	if got, want := s.recomputeTime(5000), 20*time.Millisecond; got != want {
		t.Fatalf("recomputeTime(5000) = %v, want %v (TTFT)", got, want)
	}
}
