package view

import (
	"testing"

	"github.com/mgrpo/mgrpo/internal/depcheck"
)

// TestViewReadsRecordsFromThePureLayer checks that the viewer reads the
// step files through the record types of package rollout only: it depends
// on neither the farm runtime nor the agents (nor, through them, the model
// client and the tools).
func TestViewReadsRecordsFromThePureLayer(t *testing.T) {
	depcheck.Forbid(t, ".", []string{"farm/...", "agents/...", "tools/...", "store/...", "trainer_bridge/...", "cmd/...", "sim/...", "run/..."},
		"the records the viewer reads belong in package rollout")
}
