package trainer

import (
	"fmt"
	"math"
	"net/http"
	"sync"
	"testing"
)

// TestSameBatchesSameBits trains the same batches on fresh models, once
// request by request, then with the datums in other orders and chunked into
// other requests, then with every request sent at once from its own
// goroutine, in reverse, and checks the parameters agree bit for bit. The
// batches are long sequences with uneven advantages and sampler logprobs,
// so a sum taken in another order (a map's, an arrival's) differs in the
// last bits.
func TestSameBatchesSameBits(t *testing.T) {
	ts := newTestServer(t, Config{Policy: Toy{Vocab: 7}})
	var data []*tdatum
	for k := range 6 {
		seq := make([]int, 160)
		for i := range seq {
			seq[i] = (i*i + 3*k*i + k) % 7
		}
		d := newDatum(seq, 4, 0, 0)
		for j := range d.advs {
			d.advs[j] = math.Sin(float64(j*(k+1))) * 0.731
			d.lps[j] = -1.9 + 0.37*math.Cos(float64(j+k))
		}
		data = append(data, d)
	}
	bodies := func(model string) []map[string]any {
		return []map[string]any{
			fwdBwd(model, 1, "importance_sampling", nil, data[:3]...),
			fwdBwd(model, 2, "ppo", nil, data[3:]...),
			optim(model, 3, 0.03),
			fwdBwd(model, 4, "importance_sampling", nil, data[1:5]...),
			optim(model, 5, 0.03),
		}
	}
	route := func(b map[string]any) string {
		if _, ok := b["adam_params"]; ok {
			return "optim_step"
		}
		return "forward_backward"
	}
	first := ts.newModel()
	for _, b := range bodies(first) {
		ts.call(route(b), b)
	}
	want, _ := ts.Params(first)
	// The same datums in other orders and other requests.
	model := ts.newModel()
	for _, b := range []map[string]any{
		fwdBwd(model, 1, "importance_sampling", nil, data[2], data[0]),
		fwdBwd(model, 2, "ppo", nil, data[5], data[3], data[4]),
		fwdBwd(model, 3, "importance_sampling", nil, data[1]),
		optim(model, 4, 0.03),
		fwdBwd(model, 5, "importance_sampling", nil, data[4], data[1]),
		fwdBwd(model, 6, "importance_sampling", nil, data[3], data[2]),
		optim(model, 7, 0.03),
	} {
		ts.call(route(b), b)
	}
	got, _ := ts.Params(model)
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("datums reordered and rechunked: param %d = %v (%#x), want %v (%#x)", i, got[i], math.Float64bits(got[i]), want[i], math.Float64bits(want[i]))
		}
	}
	for run := range 8 {
		model := ts.newModel()
		bs := bodies(model)
		if run%2 == 0 {
			for _, b := range bs {
				ts.call(route(b), b)
			}
		} else {
			var wg sync.WaitGroup
			errs := make(chan error, len(bs))
			for i := len(bs) - 1; i >= 0; i-- {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if st, m := ts.postNoFatal(route(bs[i]), bs[i]); st != http.StatusOK {
						errs <- fmt.Errorf("%s: %d %v", route(bs[i]), st, m)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			ts.result(ts.mustPost("optim_step", bs[len(bs)-1])["request_id"])
		}
		got, _ := ts.Params(model)
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("run %d: param %d = %v (%#x), want %v (%#x) as the first run gave", run, i, got[i], math.Float64bits(got[i]), want[i], math.Float64bits(want[i]))
			}
		}
	}
}
