package trainer

import (
	"math"
	"testing"
)

// handDatum is the datum of the hand computations: sequence 0 1 2 3 1
// (four targets), target 1 without weight, all-zero logits over 4 buckets
// so the trainer's logprob of every target is −ln 4.
func handDatum() *tdatum {
	return &tdatum{
		tokens:  []int{0, 1, 2, 3, 1},
		weights: []float64{1, 0, 1, 1},
		lps:     []float64{-1.0, -1.6, -1.2, -2.0},
		advs:    []float64{1, 1, -1, 0.5},
	}
}

func TestLossValues(t *testing.T) {
	lp := -math.Log(4)
	r := func(s float64) float64 { return math.Exp(lp - s) }
	// Ratios: 0.680 (below 0.8), 0.830 (inside), 1.847 (above 1.2).
	is := -(r(-1.0)*1 + r(-1.2)*-1 + r(-2.0)*0.5)
	// ppo: target 0 is below the range with A > 0, so min(r·A, 0.8·A)
	// is r·A; target 3 is above it with A > 0, so 1.2·A.
	ppo := -(r(-1.0)*1 + r(-1.2)*-1 + 1.2*0.5)
	diffs := []float64{math.Abs(lp + 1.0), math.Abs(lp + 1.2), math.Abs(lp + 2.0)}
	for _, c := range []struct {
		loss     string
		cfg      map[string]float64
		want     float64
		clipFrac float64
		elem     []float64
	}{
		{"importance_sampling", nil, is, 0, []float64{-r(-1.0), 0, r(-1.2), -r(-2.0) * 0.5}},
		{"ppo", map[string]float64{"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}, ppo, 2.0 / 3, []float64{-r(-1.0), 0, r(-1.2), -0.6}},
		{"cross_entropy", nil, -3 * lp, 0, []float64{-lp, 0, -lp, -lp}},
	} {
		t.Run(c.loss, func(t *testing.T) {
			ts := newTestServer(t, Config{Policy: zeroToy{Toy{Vocab: 4}}})
			model := ts.newModel()
			res := ts.call("forward_backward", fwdBwd(model, 1, c.loss, c.cfg, handDatum()))
			if got := metric(t, res, "loss:sum"); !near(got, c.want, 1e-12) {
				t.Errorf("loss:sum %v, want %v", got, c.want)
			}
			if got := metric(t, res, "clip_fraction:mean"); !near(got, c.clipFrac, 1e-12) {
				t.Errorf("clip_fraction:mean %v, want %v", got, c.clipFrac)
			}
			if got := metric(t, res, "weighted_tokens:sum"); got != 3 {
				t.Errorf("weighted_tokens:sum %v, want 3", got)
			}
			if c.loss != "cross_entropy" {
				if got, want := metric(t, res, "logprob_diff_abs:mean"), (diffs[0]+diffs[1]+diffs[2])/3; !near(got, want, 1e-12) {
					t.Errorf("logprob_diff_abs:mean %v, want %v", got, want)
				}
				if got := metric(t, res, "logprob_diff_abs:max"); !near(got, diffs[2], 1e-12) {
					t.Errorf("logprob_diff_abs:max %v, want %v", got, diffs[2])
				}
			}
			out := res["loss_fn_outputs"].([]any)[0].(map[string]any)
			lps := out["logprobs"].(map[string]any)["data"].([]any)
			elem := out["elementwise_loss"].(map[string]any)["data"].([]any)
			for j := range 4 {
				// Targets without weight are not scored: logprob 0.
				if got, want := lps[j].(float64), lp*handDatum().weights[j]; !near(got, want, 1e-12) {
					t.Errorf("logprobs[%d] = %v, want %v", j, got, want)
				}
				if got := elem[j].(float64); !near(got, c.elem[j], 1e-12) {
					t.Errorf("elementwise_loss[%d] = %v, want %v", j, got, c.elem[j])
				}
			}
		})
	}
}

func TestAdamByHand(t *testing.T) {
	p := []float64{1, -2}
	var a adamState
	c := adamConfig{lr: 0.1, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.01, clipNorm: 0.4}
	// Step 1: the gradient (norm 0.51) is clipped to norm 0.4; with bias
	// correction the first update is lr·sign(g); decay takes lr·wd·p first.
	gn, _ := a.step(p, []float64{0.5, -0.1}, c)
	if !near(gn, math.Sqrt(0.26), 1e-12) {
		t.Errorf("grad norm %v, want √0.26", gn)
	}
	if want := []float64{1*(1-0.001) - 0.1, -2*(1-0.001) + 0.1}; !near(p[0], want[0], 1e-7) || !near(p[1], want[1], 1e-7) {
		t.Errorf("after step 1: %v, want %v", p, want)
	}
	// Step 2, gradient (0.1, 0.2) unclipped: m = 0.9·m1 + 0.1·g,
	// v = 0.99·v1 + 0.01·g², divided by 1−0.9² and 1−0.99².
	g1 := []float64{0.5 * 0.4 / math.Sqrt(0.26), -0.1 * 0.4 / math.Sqrt(0.26)}
	g2 := []float64{0.1, 0.2}
	want := make([]float64, 2)
	prev := append([]float64(nil), p...)
	for i := range 2 {
		m := 0.9*0.1*g1[i] + 0.1*g2[i]
		v := 0.99*0.01*g1[i]*g1[i] + 0.01*g2[i]*g2[i]
		want[i] = prev[i]*(1-0.001) - 0.1*(m/0.19)/(math.Sqrt(v/(1-0.99*0.99))+1e-8)
	}
	a.step(p, g2, c)
	if !near(p[0], want[0], 1e-12) || !near(p[1], want[1], 1e-12) || !near(want[0], 0.814615658, 1e-8) {
		t.Errorf("after step 2: %v, want %v", p, want)
	}
}

func TestOptimStepThroughServer(t *testing.T) {
	// One IS forward_backward on handDatum at zero logits, then one step:
	// each gradient entry's sign decides the update, lr·sign(g).
	ts := newTestServer(t, Config{Policy: zeroToy{Toy{Vocab: 4}}})
	model := ts.newModel()
	ts.call("forward_backward", fwdBwd(model, 1, "importance_sampling", nil, handDatum()))
	ts.call("optim_step", optim(model, 2, 0.01))
	got, _ := ts.Params(model)
	// Row a is the logits after bucket a. Target 0 (0→1, A = 1) and
	// target 3 (3→1, A = 0.5) push token 1 up in rows 0 and 3; target 2
	// (2→3, A = −1) pushes token 3 down in row 2; row 1's only target has
	// no weight.
	l := 0.01
	want := []float64{
		-l, l, -l, -l,
		0, 0, 0, 0,
		l, l, l, -l,
		-l, l, -l, -l,
	}
	for i := range want {
		if !near(got[i], want[i], 1e-9) {
			t.Errorf("param %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestGradientMatchesFiniteDifferences(t *testing.T) {
	pol := Toy{Vocab: 5}
	for _, c := range []struct {
		loss string
		cfg  map[string]float64
	}{
		{"importance_sampling", nil},
		{"ppo", map[string]float64{"clip_low_threshold": 0.8, "clip_high_threshold": 1.25}},
		{"cross_entropy", nil},
	} {
		t.Run(c.loss, func(t *testing.T) {
			ts := newTestServer(t, Config{Policy: pol})
			model := ts.newModel()
			params, _ := ts.Params(model)
			seqs := [][]int{{0, 1, 2, 3, 4, 0, 2}, {3, 3, 1, 4, 2, 1}}
			// Sampler logprobs off the trainer's by ±0.5 (ratios far
			// outside ppo's range) and ±0.05 (inside), so no ratio sits
			// on a threshold where the loss has a kink.
			offsets := []float64{0.5, -0.05, -0.5, 0.05, 0.5, -0.5}
			var data []*tdatum
			for i, seq := range seqs {
				d := newDatum(seq, 2, 0, float64(1-2*i)*0.7)
				mask := make([]bool, len(seq))
				for j := 1; j < len(seq); j++ {
					mask[j] = d.weights[j-1] != 0
				}
				sc, err := pol.Score(params, seq, mask)
				if err != nil {
					t.Fatal(err)
				}
				for j := range d.lps {
					d.lps[j] = sc.Logprobs[j+1] + offsets[(i+j)%len(offsets)]
				}
				data = append(data, d)
			}
			ts.call("forward_backward", fwdBwd(model, 1, c.loss, c.cfg, data...))
			m := ts.model(model)
			m.st.Lock()
			grad := m.gradient()
			m.st.Unlock()
			seq := 2
			lossAt := func(k int, h float64) float64 {
				m.st.Lock()
				m.params[k] += h
				m.st.Unlock()
				res := ts.call("forward", forwardBody(model, seq, c.loss, c.cfg, data...))
				seq++
				m.st.Lock()
				m.params[k] -= h
				m.st.Unlock()
				return metric(t, res, "loss:sum")
			}
			const h = 1e-6
			nonzero := 0
			for k := range params {
				fd := (lossAt(k, h) - lossAt(k, -h)) / (2 * h)
				if math.Abs(fd-grad[k]) > 1e-6 {
					t.Errorf("d loss / d param %d: gradient %v, finite difference %v", k, grad[k], fd)
				}
				if grad[k] != 0 {
					nonzero++
				}
			}
			if nonzero < 5 {
				t.Errorf("only %d nonzero gradient entries: the check proves little", nonzero)
			}
		})
	}
}
