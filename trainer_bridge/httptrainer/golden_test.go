package httptrainer

import (
	"flag"
	"path/filepath"
	"testing"

	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/trainertest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// TestGoldenStepBody pins the bytes of a POST /v1/steps body: the body of
// trainertest.GoldenBatch is exactly testdata/step-body.golden.json (go test
// -update rewrites it).
func TestGoldenStepBody(t *testing.T) {
	b := trainertest.GoldenBatch(t)
	h := stepHeader{Key: b.IdempotencyKey(), Run: b.Run, Role: b.Role, Step: b.Step, PolicyVersion: b.PolicyVersion,
		Loss: trainerbridge.LossPPO, ClipLow: 0.2, ClipHigh: 0.28, Adam: trainerbridge.DefaultAdam}
	got, err := encodeBody(h, b, false)
	if err != nil {
		t.Fatal(err)
	}
	trainertest.CheckGolden(t, filepath.Join("testdata", "step-body.golden.json"), got, *update)
}
