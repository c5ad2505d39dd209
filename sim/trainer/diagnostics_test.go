package trainer

import (
	"strings"
	"testing"
)

// sampled returns a datum of seq whose sampler logprobs are the policy's
// own at params (as a sampler at the trainer's parameters reports them).
func sampled(t *testing.T, pol Policy, params []float64, seq []int, prompt int, adv float64) *tdatum {
	t.Helper()
	d := newDatum(seq, prompt, 0, adv)
	sc, err := pol.Score(params, seq, datum{seq: seq, weights: d.weights}.mask())
	if err != nil {
		t.Fatal(err)
	}
	for j := range d.lps {
		d.lps[j] = sc.Logprobs[j+1] * d.weights[j]
	}
	return d
}

func TestDiagnosticsCatchBrokenBatches(t *testing.T) {
	pol := Toy{Vocab: 6, MaxToken: 100, Tagged: true}
	ts := newTestServer(t, Config{Policy: pol})
	model := ts.newModel()
	params, _ := ts.Params(model)
	// A group of four rollouts of question 3: token 0 is the group, token
	// 1 the reward (0 or 1), advantages (R − μ)/σ = ±1.
	seqs := [][]int{{3, 1, 2, 4, 5, 1, 2}, {3, 0, 5, 5, 1, 4}, {3, 1, 4, 2, 2, 3, 0}, {3, 0, 1, 1, 5, 2}}
	advs := []float64{1, -1, 1, -1}
	batch := func(swap bool) []*tdatum {
		var out []*tdatum
		for i, s := range seqs {
			a := advs[i]
			if swap && i < 2 {
				a = advs[1-i]
			}
			out = append(out, sampled(t, pol, params, s, 2, a))
		}
		return out
	}
	seq := 0
	next := func() int { seq++; return seq }

	clean := ts.call("forward", forwardBody(model, next(), "ppo", nil, batch(false)...))
	for _, name := range []string{"logprob_diff_abs:max", "unmatched_tokens:sum", "advantage_order_violations:sum", "clip_fraction:mean"} {
		if got := metric(t, clean, name); got != 0 {
			t.Errorf("clean batch: %s = %v, want 0", name, got)
		}
	}

	t.Run("CorruptedToken", func(t *testing.T) {
		b := batch(false)
		// Token 4 of datum 2 replaced (input and target alike): the
		// sampler's logprobs no longer fit the tokens.
		b[2].tokens = append([]int(nil), b[2].tokens...)
		b[2].tokens[4] = (b[2].tokens[4] + 1) % 6
		res := ts.call("forward", forwardBody(model, next(), "ppo", nil, b...))
		if got := metric(t, res, "logprob_diff_abs:max"); got < 1e-3 {
			t.Errorf("corrupted token: logprob_diff_abs:max %v, want it visible", got)
		}
		// A token the policy cannot produce at all is counted.
		b[2].tokens[4] = 500
		res = ts.call("forward", forwardBody(model, next(), "ppo", nil, b...))
		if got := metric(t, res, "unmatched_tokens:sum"); got != 1 {
			t.Errorf("unproducible token: unmatched_tokens:sum %v, want 1", got)
		}
	})

	t.Run("ShiftedTargets", func(t *testing.T) {
		b := batch(false)
		b[1].targetsOverride = append(b[1].tokens[2:], 0)
		m := ts.call("forward_backward", fwdBwd(model, next(), "ppo", nil, b...))
		if d, _ := m["error"].(string); m["category"] != "user" || !strings.Contains(d, "datum 1") || !strings.Contains(d, "target_tokens") || !strings.Contains(d, "misaligned") {
			t.Errorf("targets shifted by one: %v, want a failed future (category user) naming datum 1 and target_tokens", m)
		}
	})

	t.Run("SwappedAdvantages", func(t *testing.T) {
		// The two halves of the group in two forward_backward requests of
		// one optimizer step: the violation spans them.
		b := batch(true)
		first := ts.call("forward_backward", fwdBwd(model, next(), "ppo", nil, b[:2]...))
		second := ts.call("forward_backward", fwdBwd(model, next(), "ppo", nil, b[2:]...))
		// Now datum 0 (R 1, A −1) is not above datum 1 (R 0, A 1) nor
		// datum 3 (R 0, A −1), and datum 2 (R 1, A 1) not above datum 1:
		// 1 pair within the first request, 2 across.
		if a, b := metric(t, first, "advantage_order_violations:sum"), metric(t, second, "advantage_order_violations:sum"); a != 1 || b != 2 {
			t.Errorf("swapped advantages: violations %v then %v, want 1 then 2", a, b)
		}
		ts.call("optim_step", optim(model, next(), 0))
		res := ts.call("forward_backward", fwdBwd(model, next(), "ppo", nil, batch(false)...))
		if got := metric(t, res, "advantage_order_violations:sum"); got != 0 {
			t.Errorf("after the step, a correct batch: %v violations, want 0", got)
		}
	})
}

func TestOrderViolations(t *testing.T) {
	r := func(g string, reward, adv float64) groupRecord { return groupRecord{g, reward, adv} }
	for _, c := range []struct {
		name       string
		old, added []groupRecord
		want       int
	}{
		{"ordered", nil, []groupRecord{r("a", 1, 1), r("a", 0, -1), r("a", 1, 1)}, 0},
		{"ties in reward", nil, []groupRecord{r("a", 1, 1), r("a", 1, -1)}, 0},
		{"equal advantage", nil, []groupRecord{r("a", 1, 0), r("a", 0, 0)}, 1},
		{"other group", nil, []groupRecord{r("a", 1, -1), r("b", 0, 1)}, 0},
		{"against old only once", []groupRecord{r("a", 0, 1)}, []groupRecord{r("a", 1, -1)}, 1},
		{"old pairs not recounted", []groupRecord{r("a", 0, 1), r("a", 1, -1)}, []groupRecord{r("a", 2, 5)}, 0},
	} {
		if got := orderViolations(c.old, c.added); got != c.want {
			t.Errorf("%s: %d violations, want %d", c.name, got, c.want)
		}
	}
}
