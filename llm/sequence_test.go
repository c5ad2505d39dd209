package llm

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// genTrajectory draws turns whose prompts either extend the previous
// prompt and completion or diverge from them. Every sampled token gets a
// unique logprob, so the test can track each one.
func genTrajectory(t *rapid.T) []*Turn {
	n := rapid.IntRange(1, 8).Draw(t, "turns")
	var (
		turns []*Turn
		prev  []int32
		tag   = 0
	)
	ids := rapid.SliceOfN(rapid.Int32Range(0, 50), 1, 20)
	for i := range n {
		var prompt []int32
		if i > 0 && rapid.Bool().Draw(t, "extend") {
			prompt = append(slices.Clone(prev), ids.Draw(t, "new")...)
		} else {
			prompt = ids.Draw(t, "prompt")
		}
		comp := ids.Draw(t, "completion")
		lps := make([]float64, len(comp))
		for k := range lps {
			tag++
			lps[k] = -float64(tag) / 1024
		}
		turns = append(turns, &Turn{PromptIDs: prompt, CompletionIDs: comp, Logprobs: lps})
		prev = append(slices.Clone(prompt), comp...)
	}
	return turns
}

func TestSequencesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		turns := genTrajectory(t)
		seqs, drifts, err := Sequences(turns)
		if err != nil {
			t.Fatal(err)
		}
		// Every sampled (id, logprob) appears once, in order, with mask 1.
		type tok struct {
			id int32
			lp float64
		}
		var want, got []tok
		for _, tr := range turns {
			for k, id := range tr.CompletionIDs {
				want = append(want, tok{id, tr.Logprobs[k]})
			}
		}
		for _, s := range seqs {
			if len(s.InputIDs) != len(s.LossMask) || len(s.InputIDs) != len(s.Logprobs) {
				t.Fatalf("lengths %d %d %d", len(s.InputIDs), len(s.LossMask), len(s.Logprobs))
			}
			for i, m := range s.LossMask {
				switch m {
				case 1:
					got = append(got, tok{s.InputIDs[i], s.Logprobs[i]})
				case 0:
					if s.Logprobs[i] != 0 {
						t.Fatalf("logprob %v at mask 0", s.Logprobs[i])
					}
				default:
					t.Fatalf("mask value %d", m)
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("mask-1 tokens %v, want %v", got, want)
		}
		// Each sequence starts with its first turn's prompt; each turn's
		// prompt and completion sit inside its sequence at the right place.
		if len(seqs) != len(drifts)+1 {
			t.Fatalf("%d sequences, %d drifts", len(seqs), len(drifts))
		}
		for _, s := range seqs {
			for k := s.FirstTurn; k < s.FirstTurn+s.NumTurns; k++ {
				tr := turns[k]
				full := append(slices.Clone(tr.PromptIDs), tr.CompletionIDs...)
				if len(full) > len(s.InputIDs) || !slices.Equal(s.InputIDs[:len(full)], full) {
					t.Fatalf("turn %d is not a prefix of its sequence", k)
				}
			}
		}
		for _, d := range drifts {
			p := turns[d.Turn-1]
			prev := append(slices.Clone(p.PromptIDs), p.CompletionIDs...)
			if len(turns[d.Turn].PromptIDs) >= len(prev) && slices.Equal(turns[d.Turn].PromptIDs[:len(prev)], prev) {
				t.Fatalf("drift at turn %d whose prompt extends the previous one", d.Turn)
			}
		}
	})
}

func TestSequencesErrors(t *testing.T) {
	cases := []struct {
		name  string
		turns []*Turn
	}{
		{"nil", []*Turn{nil}},
		{"no ids", []*Turn{{}}},
		{"mismatch", []*Turn{{PromptIDs: []int32{1}, CompletionIDs: []int32{2, 3}, Logprobs: []float64{-1}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := Sequences(tc.turns); err == nil {
				t.Error("no error")
			}
		})
	}
}
