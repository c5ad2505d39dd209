package failure

import (
	"testing"

	"github.com/mgrpo/mgrpo/internal/depcheck"
)

// TestFailureIsALeaf checks that the failure classes import no package of
// the project, so that every layer can import them.
func TestFailureIsALeaf(t *testing.T) {
	depcheck.Forbid(t, ".", []string{"agents/...", "tools/...", "rollout/...", "store/...", "trainer_bridge/...", "bench/...", "cmd/...", "sim/...", "run/..."},
		"the failure classes must stay a leaf; keep classification logic with the code that knows the errors")
}
