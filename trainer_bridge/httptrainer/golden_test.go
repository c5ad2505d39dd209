package httptrainer

import (
	"bytes"
	"flag"
	"os"
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
	golden := filepath.Join("testdata", "step-body.golden.json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("step body differs from %s:\n got %s\nwant %s", golden, got, want)
	}
}
