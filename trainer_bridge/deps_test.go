package trainerbridge

import (
	"testing"

	"github.com/mgrpo/mgrpo/internal/depcheck"
)

// TestImportsNothingAbove checks the layering of ARCHITECTURE.md: the
// trainer bridge and its backends (tests excluded) depend on the pure
// rollout package and on nothing of the agents, the model client, the
// tools, the farm runtime, the benchmarks, the CLI or the sim.
func TestImportsNothingAbove(t *testing.T) {
	depcheck.Forbid(t, "./...", []string{"agents", "tools", "rollout/farm", "run", "store", "bench", "cmd", "sim"},
		"the trainer bridge takes samples from the pure rollout package only")
}
