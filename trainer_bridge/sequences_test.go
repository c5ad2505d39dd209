package trainerbridge

import (
	"math"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
)

func TestDistinctSequences(t *testing.T) {
	ids := []int{1, 2, 3}
	mask := []int8{0, 1, 1}
	lp := []float64{0, -0.5, -0.25}
	shared := rollout.Sample{InputIDs: ids, LossMask: mask, Logprobs: lp}
	copied := rollout.Sample{InputIDs: []int{1, 2, 3}, LossMask: []int8{0, 1, 1}, Logprobs: []float64{0, -0.5, -0.25}}
	negZero := rollout.Sample{InputIDs: []int{1, 2, 3}, LossMask: []int8{0, 1, 1}, Logprobs: []float64{math.Copysign(0, -1), -0.5, -0.25}}
	other := rollout.Sample{InputIDs: []int{1, 2, 4}, LossMask: []int8{0, 1, 1}, Logprobs: []float64{0, -0.5, -0.25}}
	empty := rollout.Sample{}
	seq, first := DistinctSequences([]rollout.Sample{shared, shared, copied, negZero, other, empty, empty})
	wantSeq := []int{0, 0, 0, 1, 2, 3, 3}
	wantFirst := []int{0, 3, 4, 5}
	if len(seq) != len(wantSeq) || len(first) != len(wantFirst) {
		t.Fatalf("got seq %v first %v, want %v %v", seq, first, wantSeq, wantFirst)
	}
	for i := range seq {
		if seq[i] != wantSeq[i] {
			t.Errorf("seq = %v, want %v", seq, wantSeq)
			break
		}
	}
	for i := range first {
		if first[i] != wantFirst[i] {
			t.Errorf("first = %v, want %v", first, wantFirst)
			break
		}
	}
}
