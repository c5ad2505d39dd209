package trainerbridge

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNothingAbove checks the layering of ARCHITECTURE.md: the
// trainer bridge and its backends (tests excluded) depend on the pure
// rollout package and on nothing of the agents, the model client, the
// tools, the farm runtime, the benchmarks, the CLI or the sim.
func TestImportsNothingAbove(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH; cannot list the packages' dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	const module = "github.com/mgrpo/mgrpo/"
	forbidden := []string{"agents", "tools", "rollout/farm", "rollout/stack", "store", "bench", "cmd", "sim"}
	for _, dep := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(dep, module)
		if !ok {
			continue
		}
		for _, f := range forbidden {
			if rel == f || strings.HasPrefix(rel, f+"/") {
				t.Errorf("the trainer bridge depends on %s, which it must not import", dep)
			}
		}
	}
}
