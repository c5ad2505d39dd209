package rollout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/rollout/rollouttest"
)

// TestEveryFieldRoundTripsThroughRolloutsCodecs fills every Sample field
// and round-trips the sample through each codec of this package: the step
// files (JSONL, as written to disk and as the store hands it over, and
// Parquet) and the trainer hand-off formats' entry with its batch fields
// and tokens. A codec that drops or renames a field fails naming both.
// The store's sequences and the trainer backends have the same test in
// their packages.
func TestEveryFieldRoundTripsThroughRolloutsCodecs(t *testing.T) {
	want := rollouttest.FilledSample(t)
	out := t.TempDir()
	files := rollout.StepFiles{Planner: []rollout.Sample{want}, Executor: []rollout.Sample{want}}
	if err := (rollout.DirSink{Dir: out, Parquet: true}).WriteStep(context.Background(), want.Step, files); err != nil {
		t.Fatal(err)
	}
	dir := rollout.StepDir(out, want.Step)

	decoded := map[string]func() ([]rollout.Sample, error){
		"step file " + rollout.PlannerFile: func() ([]rollout.Sample, error) {
			return rollout.ReadSamplesJSONL(filepath.Join(dir, rollout.PlannerFile))
		},
		"the store's step file " + rollout.ExecutorFile: func() ([]rollout.Sample, error) {
			data, err := os.ReadFile(filepath.Join(dir, rollout.ExecutorFile))
			if err != nil {
				return nil, err
			}
			return rollout.DecodeSamplesJSONL(bytes.NewReader(data), rollout.ExecutorFile)
		},
		"step file " + rollout.PlannerParquetFile: func() ([]rollout.Sample, error) {
			return rollout.ReadSamplesParquet(filepath.Join(dir, rollout.PlannerParquetFile))
		},
		"step file " + rollout.ExecutorParquetFile: func() ([]rollout.Sample, error) {
			return rollout.ReadSamplesParquet(filepath.Join(dir, rollout.ExecutorParquetFile))
		},
		"the hand-off formats' sample entry": func() ([]rollout.Sample, error) {
			raw, err := rollout.AppendSampleEntryJSON(nil, 0, &want)
			if err != nil {
				return nil, err
			}
			var e rollout.SampleEntry
			if err := json.Unmarshal(raw, &e); err != nil {
				return nil, err
			}
			q := rollout.Tokens{InputIDs: want.InputIDs, LossMask: want.LossMask, Logprobs: want.Logprobs}
			return []rollout.Sample{e.Expand(want.Run, want.Step, want.Role, q)}, nil
		},
	}
	for codec, decode := range decoded {
		got, err := decode()
		if err != nil {
			t.Errorf("%s: %v", codec, err)
			continue
		}
		if len(got) != 1 {
			t.Errorf("%s: %d samples, want 1", codec, len(got))
			continue
		}
		rollouttest.CheckRoundTrip(t, codec, want, got[0])
	}
}

// TestFilledSampleFillsEveryField checks the helper the codec tests share:
// no field of its sample is zero.
func TestFilledSampleFillsEveryField(t *testing.T) {
	if zero := rollouttest.DiffFields(rollout.Sample{}, rollouttest.FilledSample(t)); len(zero) != len(rollouttest.Fields()) {
		t.Errorf("fields %v are filled, want all of %v", zero, rollouttest.Fields())
	}
}
