package trainer

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
)

// TestModelsTrainConcurrently trains four models at once, each sending its
// requests out of order from several goroutines: every model ends with the
// same parameters as one trained alone, in order.
func TestModelsTrainConcurrently(t *testing.T) {
	ts := newTestServer(t, Config{})
	d := newDatum([]int{0, 1, 2, 3, 2, 1}, 2, -1.2, 0.8)
	bodies := func(model string) []struct {
		route string
		body  map[string]any
	} {
		return []struct {
			route string
			body  map[string]any
		}{
			{"forward_backward", fwdBwd(model, 1, "ppo", nil, d)},
			{"forward_backward", fwdBwd(model, 2, "importance_sampling", nil, d)},
			{"optim_step", optim(model, 3, 0.05)},
			{"forward_backward", fwdBwd(model, 4, "ppo", nil, d)},
			{"optim_step", optim(model, 5, 0.05)},
		}
	}
	alone := ts.newModel()
	for _, b := range bodies(alone) {
		ts.call(b.route, b.body)
	}
	want, _ := ts.Params(alone)

	var models []string
	for range 4 {
		models = append(models, ts.newModel())
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for _, model := range models {
		bs := bodies(model)
		for i := len(bs) - 1; i >= 0; i-- {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, m := ts.postNoFatal(bs[i].route, bs[i].body)
				if st != http.StatusOK {
					errs <- fmt.Errorf("%s of %s: %d %v", bs[i].route, model, st, m)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, model := range models {
		// The last request's future resolves after all the others.
		ts.result(ts.mustPost("optim_step", optim(model, 5, 0.05))["request_id"])
		got, _ := ts.Params(model)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("model %s: param %d = %v, want %v as trained alone", model, i, got[i], want[i])
			}
		}
	}
}

func TestCloseEndsLongPolls(t *testing.T) {
	ts := newTestServer(t, Config{})
	model := ts.newModel()
	sub := ts.mustPost("optim_step", optim(model, 2, 0.1)) // waits for seq_id 1
	done := make(chan int)
	go func() {
		st, _ := ts.postNoFatal("retrieve_future", map[string]any{"request_id": sub["request_id"]})
		done <- st
	}()
	// Wait until the poll is held, then close.
	waitFor(t, func() bool { return ts.polling() > 0 })
	ts.Close()
	if st := <-done; st != http.StatusServiceUnavailable {
		t.Errorf("long poll at Close: status %d, want 503", st)
	}
	if st, _ := ts.postNoFatal("create_session", map[string]any{}); st != http.StatusServiceUnavailable {
		t.Errorf("request after Close: %d, want 503", st)
	}
	if err := ts.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func BenchmarkForwardBackward(b *testing.B) {
	pol := Toy{Vocab: 32}
	s := New(Config{Policy: pol, BaseModels: []string{testBase}})
	defer s.Close()
	params, _ := pol.Initial(testBase)
	m := newModel("m", testBase, 0, params)
	seq := make([]int, 513)
	for i := range seq {
		seq[i] = (i * 7) % 1000
	}
	d := datum{seq: seq, weights: make([]float64, 512), sampler: make([]float64, 512), advantages: make([]float64, 512)}
	for j := 256; j < 512; j++ {
		d.weights[j], d.sampler[j], d.advantages[j] = 1, -3, 0.5
	}
	data := []datum{d, d, d, d}
	run := s.lossRun(data, lossSpec{fn: lossPPO, lo: 0.8, hi: 1.2}, true)
	b.ReportAllocs()
	for b.Loop() {
		if _, fl := run(m); fl != nil {
			b.Fatal(fl.msg)
		}
	}
}
