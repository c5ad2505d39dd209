package rollout

import (
	"testing"

	"github.com/mgrpo/mgrpo/internal/depcheck"
)

// TestPureLayerImportsNothingAbove checks that the pure M-GRPO layer stays
// importable by the store and the trainer bridge: none of its dependencies,
// direct or indirect, is a package of the project above it (the agents, the
// model client, the tools, the farm runtime, the store, the trainer bridge,
// the benchmarks or the CLI).
func TestPureLayerImportsNothingAbove(t *testing.T) {
	depcheck.Forbid(t, ".", []string{"agents", "tools", "rollout/farm", "store", "trainer_bridge", "bench", "cmd", "sim"},
		"the pure layer must not; move the code that needs it to rollout/farm")
}
