package files

import (
	"errors"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/trainertest"
)

func TestConformance(t *testing.T) {
	root := t.TempDir()
	trainertest.Run(t, func(t *testing.T, run string, role rollout.Role) trainerbridge.Trainer {
		tr, err := trainerbridge.Open(trainertest.Context(t), "file://"+filepath.Join(root, run), trainerbridge.Options{Run: run, Role: role})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return tr
	})
}

// mustWrite trains b with a files Trainer under dir and reads it back.
func mustWrite(t *testing.T, dir string, b trainerbridge.Batch) (trainerbridge.StepResult, Manifest, []rollout.Sample) {
	t.Helper()
	tr := New(dir, trainerbridge.Options{Run: b.Run, Role: b.Role})
	if err := tr.Start(trainertest.Context(t)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	res, err := tr.Train(trainertest.Context(t), b)
	if err != nil {
		t.Fatalf("Train: %v", err)
	}
	m, got, err := ReadStep(StepDir(dir, b.Role, b.Step))
	if err != nil {
		t.Fatalf("ReadStep: %v", err)
	}
	return res, m, got
}

func TestRoundTripExpandsToTheBatch(t *testing.T) {
	plan, exec := trainertest.MustBatches(t, trainertest.BatchSpec{Run: "rt", Step: 3, PolicyVersion: 5, Queries: 5, K: 4, DBar: 3, Seed: 11})
	dups, pads := 0, 0
	for _, s := range exec.Samples {
		if s.DuplicateOf != nil {
			dups++
		}
		if s.FinishReason == rollout.FinishReasonPadding {
			pads++
		}
	}
	if dups == 0 || pads == 0 {
		t.Fatalf("the test batch has %d duplicates and %d padding samples; want some of each", dups, pads)
	}
	dir := t.TempDir()
	for _, b := range []trainerbridge.Batch{plan, exec} {
		t.Run(string(b.Role), func(t *testing.T) {
			res, m, got := mustWrite(t, dir, b)
			if len(got) != len(b.Samples) {
				t.Fatalf("read %d samples, want %d", len(got), len(b.Samples))
			}
			for i := range got {
				if diff := cmp.Diff(b.Samples[i], got[i]); diff != "" {
					t.Fatalf("sample %d (-written +read):\n%s", i, diff)
				}
			}
			if res.Weights != "" || res.Version != b.PolicyVersion {
				t.Errorf("result weights %q version %d, want none and %d", res.Weights, res.Version, b.PolicyVersion)
			}
			if m.Samples != len(b.Samples) || m.Run != b.Run || m.Role != b.Role || m.Step != b.Step || m.IdempotencyKey != b.IdempotencyKey() {
				t.Errorf("manifest %+v does not describe the batch", m)
			}
			if b.Role == rollout.RoleExecutor && m.Sequences >= m.Samples-dups+1 {
				t.Errorf("%d sequences for %d samples with %d duplicates: duplicates were stored again", m.Sequences, m.Samples, dups)
			}
		})
	}
}

func TestRecordEdgeCases(t *testing.T) {
	base := rollout.Sample{Run: "r", Role: rollout.RolePlanner, Step: 1, QueryID: "q"}
	tests := []struct {
		name     string
		ids      []int
		mask     []int8
		logprobs []float64
	}{
		{"one padding token", []int{0}, []int8{0}, []float64{0}},
		{"every token generated", []int{1, 2, 3}, []int8{1, 1, 1}, []float64{-0.5, -0, -1e-300}},
		{"negative zero on a masked token", []int{1, 2}, []int8{0, 1}, []float64{math.Copysign(0, -1), -0.25}},
		{"a logprob where the mask is 0", []int{7, 8}, []int8{0, 1}, []float64{-3, -0.1}},
		{"a mask value other than 0 and 1", []int{7, 8}, []int8{2, -1}, []float64{0, 0}},
		{"the largest and smallest ids", []int{math.MaxInt32, math.MinInt32}, []int8{1, 0}, []float64{math.SmallestNonzeroFloat64, 0}},
		{"no tokens", nil, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			s.InputIDs, s.LossMask, s.Logprobs = tc.ids, tc.mask, tc.logprobs
			b := trainerbridge.Batch{Run: "r", Role: rollout.RolePlanner, Step: 1, Samples: []rollout.Sample{s, s}}
			_, m, got := mustWrite(t, t.TempDir(), b)
			if m.Sequences != 1 {
				t.Errorf("%d sequences for two equal samples, want 1", m.Sequences)
			}
			for i := range got {
				if !cmp.Equal(got[i], s) || !bitsEqual(got[i].Logprobs, s.Logprobs) {
					t.Errorf("sample %d read back as %v %v %v, want %v %v %v", i, got[i].InputIDs, got[i].LossMask, got[i].Logprobs, s.InputIDs, s.LossMask, s.Logprobs)
				}
			}
		})
	}
}

func TestTrainRejects(t *testing.T) {
	plan, exec := trainertest.MustBatches(t, trainertest.BatchSpec{Run: "rej", Step: 1, Seed: 5})
	other := plan
	other.Samples = append([]rollout.Sample(nil), plan.Samples...)
	other.Samples[0].Reward += 1
	foreign := plan
	foreign.Samples = append([]rollout.Sample(nil), plan.Samples...)
	foreign.Samples[1].Step = 9
	bigID := plan
	bigID.Samples = []rollout.Sample{plan.Samples[0]}
	bigID.Samples[0].InputIDs = append([]int{1 << 40}, plan.Samples[0].InputIDs[1:]...)

	dir := t.TempDir()
	tr := New(dir, trainerbridge.Options{Run: "rej", Role: rollout.RolePlanner})
	ctx := trainertest.Context(t)
	if _, err := tr.Train(ctx, plan); err != nil {
		t.Fatalf("Train: %v", err)
	}
	tests := []struct {
		name string
		b    trainerbridge.Batch
	}{
		{"other samples for a written step", other},
		{"a sample of another step", foreign},
		{"a batch of the other role", exec},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tr.Train(ctx, tc.b); !errors.Is(err, trainerbridge.ErrRejected) {
				t.Errorf("Train: %v, want ErrRejected", err)
			}
		})
	}
	t.Run("an id beyond 32 bits", func(t *testing.T) {
		bigID.Step = 2
		bigID.Samples[0].Step = 2
		if _, err := tr.Train(ctx, bigID); err == nil {
			t.Errorf("Train of a token id 2^40 succeeded")
		}
		if _, err := os.Stat(StepDir(dir, rollout.RolePlanner, 2)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a failed write left %s: %v", StepDir(dir, rollout.RolePlanner, 2), err)
		}
		left, _ := filepath.Glob(filepath.Join(dir, "planner", ".step-*"))
		if len(left) != 0 {
			t.Errorf("a failed write left temporary directories %v", left)
		}
	})
}

func TestReadStepDetectsCorruption(t *testing.T) {
	plan, _ := trainertest.MustBatches(t, trainertest.BatchSpec{Run: "c", Step: 1, Seed: 6})
	dir := t.TempDir()
	mustWrite(t, dir, plan)
	step := StepDir(dir, plan.Role, plan.Step)
	path := filepath.Join(step, SequencesFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadStep(step); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ReadStep of a flipped bit: %v, want ErrCorrupt", err)
	}
}

func TestDirFromURL(t *testing.T) {
	tests := []struct {
		raw, want string
		bad       bool
	}{
		{raw: "file:///data/steps", want: "/data/steps"},
		{raw: "file://runs/x", want: "runs/x"},
		{raw: "file:runs/x", want: "runs/x"},
		{raw: "file://", bad: true},
		{raw: "file:///x?y=1", bad: true},
	}
	for _, tc := range tests {
		u, err := url.Parse(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DirFromURL(u)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("DirFromURL(%q) = %q, %v; want %q, error %v", tc.raw, got, err, tc.want, tc.bad)
		}
	}
}

// FuzzDecodeSequences checks that the decoder never panics on arbitrary
// bytes and that what it accepts encodes back to the same bytes.
func FuzzDecodeSequences(f *testing.F) {
	rec, _ := appendRecord([]byte(SequencesMagic), &rollout.Sample{InputIDs: []int{1, 2}, LossMask: []int8{0, 1}, Logprobs: []float64{0, -0.5}})
	f.Add(rec)
	f.Add([]byte(SequencesMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		seqs, err := DecodeSequences(data)
		if err != nil {
			return
		}
		out := []byte(SequencesMagic)
		for _, q := range seqs {
			s := rollout.Sample{InputIDs: q.InputIDs, LossMask: q.LossMask, Logprobs: q.Logprobs}
			if out, err = appendRecord(out, &s); err != nil {
				t.Fatalf("re-encode: %v", err)
			}
		}
		again, err := DecodeSequences(out)
		if err != nil || len(again) != len(seqs) {
			t.Fatalf("decode of the re-encoding: %d sequences, %v; want %d", len(again), err, len(seqs))
		}
	})
}

// bitsEqual compares logprobs bit for bit (cmp.Equal takes -0 for 0).
func bitsEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}
