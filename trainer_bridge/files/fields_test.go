package files

import (
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/rollout/rollouttest"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// TestEveryFieldRoundTrips writes a sample whose every field is filled
// (rollouttest.FilledSample) as a step of the files backend and reads it
// back: a field the manifest, the index or the sequences file drops or
// renames fails naming it.
func TestEveryFieldRoundTrips(t *testing.T) {
	want := rollouttest.FilledSample(t)
	b := trainerbridge.Batch{Run: want.Run, Role: want.Role, Step: want.Step, PolicyVersion: want.PolicyVersion, Samples: []rollout.Sample{want}}
	_, _, got := mustWrite(t, t.TempDir(), b)
	if len(got) != 1 {
		t.Fatalf("read %d samples, want 1", len(got))
	}
	rollouttest.CheckRoundTrip(t, "the files trainer backend", want, got[0])
}
