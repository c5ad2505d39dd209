package policy

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mgrpo/mgrpo/sim/web"
	"pgregory.net/rapid"
)

// turnRecord is one played turn: the request (with its params) and what
// the policy answered.
type turnRecord struct {
	req Request
	out Output
}

// recorder plays with params and records every turn.
type recorder struct {
	p      *Policy
	params *Params
	turns  []turnRecord
}

func (r *recorder) Act(req Request) Output {
	req.Params = r.params
	out := r.p.Act(req)
	r.turns = append(r.turns, turnRecord{req: req, out: out})
	return out
}

// playedTurns plays rollouts of the world's first questions with params and
// returns every turn of every role.
func playedTurns(tb testing.TB, p *Policy, params *Params, questions int, seed uint64) []turnRecord {
	tb.Helper()
	w, err := web.Generate(web.Config{Seed: 7, Questions: questions})
	if err != nil {
		tb.Fatalf("generate world: %v", err)
	}
	rec := &recorder{p: p, params: params}
	for qi, q := range w.Questions {
		for j := range 2 {
			playQuestion(rec, w, q, rand.New(rand.NewPCG(seed, uint64(qi*1000+j))))
		}
	}
	return rec.turns
}

// randomParams perturbs the defaults of s by noise of scale sd.
func randomParams(tb testing.TB, s Skills, rng *rand.Rand, sd float64) *Params {
	tb.Helper()
	v := DefaultParams(s).Vector()
	for i := range v {
		v[i] += sd * rng.NormFloat64()
	}
	p, err := ParamsFromVector(v)
	if err != nil {
		tb.Fatalf("params: %v", err)
	}
	return p
}

// checkScores scores every turn and compares with what sampling reported.
func checkScores(t *testing.T, p *Policy, params *Params, turns []turnRecord) (decisions, maxReplays int) {
	t.Helper()
	for i, tr := range turns {
		r := p.ScoreMatch(tr.req, params, func(o Output) bool { return SameText(o, tr.out) }, 0)
		if !r.OK {
			t.Fatalf("turn %d: %s\noutput %+v", i, r.Reason, tr.out)
		}
		if d := math.Abs(r.Logprob - tr.out.Logprob); d > 1e-9 {
			t.Fatalf("turn %d: Score logprob %v, sampled %v (|Δ| %g)\nsampled path %v\nscored path %v", i, r.Logprob, tr.out.Logprob, d, pathOf(tr.out.Decisions), pathOf(r.Decisions))
		}
		decisions += len(r.Decisions)
		maxReplays = max(maxReplays, r.Replays)
	}
	return decisions, maxReplays
}

func pathOf(ds []Decision) []string {
	var s []string
	for _, d := range ds {
		s = append(s, string(d.Role)+"."+string(d.Kind)+"="+string(rune('0'+d.Taken)))
	}
	return s
}

func TestScoreRecoversSampledLogprob(t *testing.T) {
	p := New(DefaultSkills())
	rng := rand.New(rand.NewPCG(5, 6))
	cases := []struct {
		name   string
		params *Params
	}{
		{"default", p.Params()},
		{"random small", randomParams(t, DefaultSkills(), rng, 0.5)},
		{"random large", randomParams(t, DefaultSkills(), rng, 2)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			turns := playedTurns(t, p, tc.params, 12, 3)
			roles := map[Role]int{}
			for _, tr := range turns {
				for _, d := range tr.out.Decisions {
					roles[d.Role]++
				}
			}
			decisions, replays := checkScores(t, p, tc.params, turns)
			t.Logf("%d turns, %d decisions (%v), at most %d replays", len(turns), decisions, roles, replays)
			if roles[RolePlanner] == 0 || roles[RoleExecutor] == 0 {
				t.Errorf("decisions per role %v: want both roles", roles)
			}
		})
	}
}

func TestScoreRefusesCorruptedOutput(t *testing.T) {
	p := New(DefaultSkills())
	for _, tr := range playedTurns(t, p, p.Params(), 3, 1) {
		bad := tr.out
		bad.Reasoning += "x"
		if r := p.ScoreMatch(tr.req, nil, func(o Output) bool { return SameText(o, bad) }, 256); r.OK {
			t.Fatalf("corrupted output scored as %v", r.Logprob)
		} else if r.Reason == "" {
			t.Fatalf("unmatched without a reason")
		}
	}
}

// TestOptionProbsSumToOne: every recorded decision's option probabilities
// sum to 1 and its outcome probabilities cover them.
func TestOptionProbsSumToOne(t *testing.T) {
	p := New(DefaultSkills())
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64().Draw(rt, "seed")
		sd := rapid.Float64Range(0, 3).Draw(rt, "sd")
		params := randomParams(t, DefaultSkills(), rand.New(rand.NewPCG(seed, 1)), sd)
		for _, tr := range playedTurns(t, p, params, 2, seed) {
			for _, d := range tr.out.Decisions {
				sum, osum := 0.0, 0.0
				for _, q := range d.Probs {
					sum += q
				}
				for g := range d.Outcomes() {
					osum += d.OutcomeProb(g)
				}
				if math.Abs(sum-1) > 1e-12 || math.Abs(osum-1) > 1e-12 {
					rt.Fatalf("%s.%s: option probs sum to %v, outcome probs to %v", d.Role, d.Kind, sum, osum)
				}
			}
		}
	})
}

// TestGradientStepRaisesTakenProb: a step along a decision's gradient (a
// positive advantage) raises the probability of the outcome it took.
func TestGradientStepRaisesTakenProb(t *testing.T) {
	p := New(DefaultSkills())
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64().Draw(rt, "seed")
		params := randomParams(t, DefaultSkills(), rand.New(rand.NewPCG(seed, 2)), rapid.Float64Range(0, 2).Draw(rt, "sd"))
		turns := playedTurns(t, p, params, 1, seed)
		tr := turns[rapid.IntRange(0, len(turns)-1).Draw(rt, "turn")]
		if len(tr.out.Decisions) == 0 {
			return
		}
		lr := rapid.Float64Range(1e-3, 0.1).Draw(rt, "lr")
		lp, grad, ok := p.Score(tr.req, tr.out, params)
		if !ok {
			rt.Fatalf("turn not recovered")
		}
		v := params.Vector()
		norm := 0.0
		for i := range v {
			v[i] += lr * grad[i]
			norm += grad[i] * grad[i]
		}
		if norm < 1e-18 {
			return // every decision was (numerically) certain
		}
		stepped, err := params.WithVector(v)
		if err != nil {
			rt.Fatal(err)
		}
		lp2, _, ok := p.Score(tr.req, tr.out, stepped)
		if !ok {
			rt.Fatalf("turn not recovered after the step")
		}
		if !(lp2 > lp) {
			rt.Fatalf("logprob %v → %v after a step of %v along a gradient of norm² %g", lp, lp2, lr, norm)
		}
	})
}

// TestGradientMatchesFiniteDifferences checks d logprob/dθ numerically on
// a sample of turns.
func TestGradientMatchesFiniteDifferences(t *testing.T) {
	p := New(DefaultSkills())
	params := randomParams(t, DefaultSkills(), rand.New(rand.NewPCG(9, 9)), 1)
	turns := playedTurns(t, p, params, 2, 4)
	const h = 1e-6
	for k, tr := range turns {
		if k%7 != 0 {
			continue
		}
		_, grad, ok := p.Score(tr.req, tr.out, params)
		if !ok {
			t.Fatalf("turn %d not recovered", k)
		}
		v := params.Vector()
		for i := range v {
			up, down := append([]float64(nil), v...), append([]float64(nil), v...)
			up[i] += h
			down[i] -= h
			pu, _ := ParamsFromVector(up)
			pd, _ := ParamsFromVector(down)
			lu, _, _ := p.Score(tr.req, tr.out, pu)
			ld, _, _ := p.Score(tr.req, tr.out, pd)
			if num := (lu - ld) / (2 * h); math.Abs(num-grad[i]) > 1e-5 {
				t.Errorf("turn %d, %s: gradient %v, finite difference %v", k, ParamNames()[i], grad[i], num)
			}
		}
	}
}
