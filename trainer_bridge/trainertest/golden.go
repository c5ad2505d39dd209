package trainertest

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// GoldenBatch is a small executor batch for the backends' golden files:
// aligned entries with duplicates and padding, then samples whose values
// exercise the encoders' edge cases (strings that need escaping, signed
// zeros, floats in exponent notation, large ids, null and set sub indices).
// It is the same batch on every call.
func GoldenBatch(tb testing.TB) trainerbridge.Batch {
	tb.Helper()
	_, b := MustBatches(tb, BatchSpec{Run: "golden", Step: 2, PolicyVersion: 1, Queries: 3, K: 2, DBar: 2, MinTokens: 3, MaxTokens: 9, Seed: 7})
	sub := 4
	edge := []rollout.Sample{
		{QueryID: "<a> & \"b\"\n\u2028", Rollout: 1, SubIndex: &sub, DuplicateOf: &rollout.SubRef{Rollout: 0, SubIndex: 3},
			PolicyVersion: math.MaxInt64, InputIDs: []int{0, math.MaxInt32, 151_000}, LossMask: []int8{0, 1, 1},
			Logprobs: []float64{0, math.Copysign(0, -1), -1e-7}, Reward: 1e21, Advantage: math.Copysign(0, -1),
			NumTurns: 12, FinishReason: "héllo \xff", FormatOK: true,
			FirstTurn: 9, SampleTurns: 3, TurnFinishReasons: []string{"tool_calls", "", "héllo \xff"}, SplitReason: rollout.SplitHistoryEdit},
		{QueryID: "", Rollout: 0, PolicyVersion: -1, InputIDs: []int{7, 8}, LossMask: []int8{0, 1},
			Logprobs: []float64{-3, -0.123456789012345}, Reward: math.SmallestNonzeroFloat64, Advantage: -1.5e-300,
			FinishReason: rollout.FinishReasonPadding},
	}
	for _, s := range edge {
		s.Run, s.Step, s.Role = b.Run, b.Step, b.Role
		b.Samples = append(b.Samples, s)
	}
	return b
}

// CheckGolden compares got with the golden file at path, or with update
// rewrites the file (creating its directory) instead.
func CheckGolden(tb testing.TB, path string, got []byte, update bool) {
	tb.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("the bytes differ from %s (go test -update rewrites it):\n got %q\nwant %q", path, got, want)
	}
}
