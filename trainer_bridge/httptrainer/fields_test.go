package httptrainer_test

import (
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/rollout/rollouttest"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/httptrainer/reference"
)

// TestEveryFieldRoundTrips sends a sample whose every field is filled
// (rollouttest.FilledSample) in a step body, plain and gzip, to the
// reference service: a field the body drops or renames fails naming it.
func TestEveryFieldRoundTrips(t *testing.T) {
	want := rollouttest.FilledSample(t)
	for _, noGzip := range []bool{false, true} {
		srv := reference.New(reference.Config{})
		cfg := fastConfig(startServer(t, srv), trainerbridge.Options{Run: want.Run, Role: want.Role})
		cfg.NoGzip = noGzip
		tr := mustStart(t, cfg)
		b := trainerbridge.Batch{Run: want.Run, Role: want.Role, Step: want.Step, PolicyVersion: want.PolicyVersion, Samples: []rollout.Sample{want}}
		if _, err := tr.Train(t.Context(), b); err != nil {
			t.Fatalf("Train: %v", err)
		}
		steps := srv.Steps()
		if len(steps) != 1 || len(steps[0].Samples) != 1 {
			t.Fatalf("the service trained %+v, want one step of one sample", steps)
		}
		codec := map[bool]string{false: "the HTTP trainer's gzip step body", true: "the HTTP trainer's step body"}[noGzip]
		rollouttest.CheckRoundTrip(t, codec, want, steps[0].Samples[0])
	}
}
