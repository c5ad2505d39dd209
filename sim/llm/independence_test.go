package llm

import (
	"testing"

	"github.com/mgrpo/mgrpo/internal/depcheck"
)

// clientPackages are the project's packages the sim must not depend on,
// tests included: the client side it stands in for, and the JSON fast
// paths that side reads and writes with. A sim sharing them would repeat
// the client's bugs instead of catching them (see doc.go, "Independence").
var clientPackages = []string{
	"agents/...", "tools/...", "rollout/...", "bench/...", "store/...", "trainer_bridge/...", "run/...", "cmd/...",
	"internal/jsonfast/...",
}

// TestSimImportsNoClientPackage fails when any package under sim/, or its
// tests, imports (directly or not) one of clientPackages. It reads the
// imports from the source files, so it runs offline.
func TestSimImportsNoClientPackage(t *testing.T) {
	g, err := depcheck.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Packages("sim/llm")) != 1 {
		t.Fatalf("the module's import graph does not hold sim/llm (root %s)", g.Root)
	}
	g.Check(t, depcheck.Rule{Packages: "sim/...", Forbidden: clientPackages, Tests: true,
		Why: "the sim must share no code with the client packages"})
}
