package policy

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestScoreAgreesOnManyTurns plays a hundred questions twice each, with and
// without reasoning, at default and at random params, and checks that
// Score recovers every sampled turn's logprob: the ambiguity rule of Act
// (see ambiguous) must cover every text two decision paths can write.
func TestScoreAgreesOnManyTurns(t *testing.T) {
	if testing.Short() {
		t.Skip("plays hundreds of whole tasks")
	}
	for _, noReasoning := range []bool{false, true} {
		s := DefaultSkills()
		s.NoReasoning = noReasoning
		p := New(s)
		rng := rand.New(rand.NewPCG(1, 2))
		for _, sd := range []float64{0, 1, 3} {
			params := randomParams(t, DefaultSkills(), rng, sd)
			turns := playedTurns(t, p, params, 100, 11)
			canonical := 0
			for i, tr := range turns {
				if ambiguous(tr.out.Decisions) {
					canonical++
				}
				r := p.ScoreMatch(tr.req, params, func(o Output) bool { return SameText(o, tr.out) }, 0)
				switch {
				case !r.OK:
					t.Errorf("no reasoning %v, sd %v, turn %d: %s", noReasoning, sd, i, r.Reason)
				case math.Abs(r.Logprob-tr.out.Logprob) > 1e-9:
					t.Errorf("no reasoning %v, sd %v, turn %d: sampled path %v (logprob %v), scored %v (%v)",
						noReasoning, sd, i, pathOf(tr.out.Decisions), tr.out.Logprob, pathOf(r.Decisions), r.Logprob)
				}
			}
			t.Logf("no reasoning %v, sd %v: %d turns, %d searched for their canonical path when sampled", noReasoning, sd, len(turns), canonical)
		}
	}
}
