package httpretry

import (
	"testing"

	"github.com/mgrpo/mgrpo/internal/depcheck"
)

// TestLeaf keeps the package a leaf every client can import.
func TestLeaf(t *testing.T) {
	depcheck.Forbid(t, ".", []string{"agents/...", "tools/...", "rollout/...", "store/...", "trainer_bridge/...", "bench/...", "cmd/...", "sim/...", "run/..."},
		"httpretry is a leaf under every HTTP client of the project")
}

// TestSimDoesNotImport keeps the sim an independent implementation of the
// wire: it must not share the clients' status error or retry policy.
func TestSimDoesNotImport(t *testing.T) {
	g, err := depcheck.Load()
	if err != nil {
		t.Fatal(err)
	}
	g.Check(t, depcheck.Rule{Packages: "sim/...", Forbidden: []string{"internal/httpretry"}, Tests: true,
		Why: "the sim is the independent side of the wire and keeps its own code"})
}
