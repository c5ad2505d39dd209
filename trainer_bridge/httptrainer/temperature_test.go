package httptrainer_test

import (
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/httptrainer/reference"
	"github.com/mgrpo/mgrpo/trainer_bridge/trainertest"
)

// TestTemperatureSent checks that the role's sampling temperature reaches
// the service in /v1/steps (and /v1/start, from the same Options), and is left out at 1 so that
// on-policy bodies are what they were before the field existed.
func TestTemperatureSent(t *testing.T) {
	for _, tc := range []struct {
		temperature, want float64
	}{{0.6, 0.6}, {1, 0}, {0, 0}} {
		srv := reference.New(reference.Config{})
		tr := mustStart(t, fastConfig(startServer(t, srv), trainerbridge.Options{Run: "temp", Role: rollout.RoleExecutor, Temperature: tc.temperature}))
		_, exec := trainertest.MustBatches(t, trainertest.BatchSpec{Run: "temp", Step: 1, Queries: 2, Seed: 1})
		if _, err := tr.Train(trainertest.Context(t), exec); err != nil {
			t.Fatalf("Train: %v", err)
		}
		if got := srv.Steps()[0].Temperature; got != tc.want {
			t.Errorf("temperature %v: the step said %v, want %v", tc.temperature, got, tc.want)
		}
	}
}
