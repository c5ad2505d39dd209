package files_test

import (
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/files"
	"github.com/mgrpo/mgrpo/trainer_bridge/trainertest"
)

// TestManifestTemperature checks that a step's manifest names the role's
// sampling temperature, is left without it at 1 (so on-policy steps are
// the bytes they were), and that a step on disk is found again only with
// the same temperature.
func TestManifestTemperature(t *testing.T) {
	for _, tc := range []struct{ temperature, want float64 }{{0.6, 0.6}, {1, 0}} {
		dir := t.TempDir()
		tr := files.New(dir, trainerbridge.Options{Run: "temp", Role: rollout.RoleExecutor, Temperature: tc.temperature})
		_, exec := trainertest.MustBatches(t, trainertest.BatchSpec{Run: "temp", Step: 1, Queries: 2, Seed: 1})
		if _, err := tr.Train(trainertest.Context(t), exec); err != nil {
			t.Fatalf("Train: %v", err)
		}
		m, err := files.ReadManifest(files.StepDir(dir, rollout.RoleExecutor, 1))
		if err != nil {
			t.Fatal(err)
		}
		if m.Temperature != tc.want {
			t.Errorf("temperature %v: manifest says %v, want %v", tc.temperature, m.Temperature, tc.want)
		}
		if _, err := tr.Train(trainertest.Context(t), exec); err != nil {
			t.Errorf("temperature %v: the same step again: %v", tc.temperature, err)
		}
		other := files.New(dir, trainerbridge.Options{Run: "temp", Role: rollout.RoleExecutor, Temperature: 0.9})
		if _, err := other.Train(trainertest.Context(t), exec); err == nil {
			t.Errorf("temperature %v: the step at another temperature was accepted", tc.temperature)
		}
	}
}
