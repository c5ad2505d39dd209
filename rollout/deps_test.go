package rollout

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPureLayerImportsNothingAbove checks that the pure M-GRPO layer stays
// importable by the store and the trainer bridge: none of its dependencies,
// direct or indirect, is a package of the project above it (the agents, the
// model client, the tools, the farm runtime, the store, the trainer bridge,
// the benchmarks or the CLI).
func TestPureLayerImportsNothingAbove(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH; cannot list the package's dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	const module = "github.com/mgrpo/mgrpo/"
	forbidden := []string{"agents", "tools", "rollout/farm", "store", "trainer_bridge", "bench", "cmd", "sim"}
	for _, dep := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(dep, module)
		if !ok {
			continue
		}
		for _, f := range forbidden {
			if rel == f || strings.HasPrefix(rel, f+"/") {
				t.Errorf("package rollout depends on %s; the pure layer must not import %s (move the code that needs it to rollout/farm)", dep, f)
			}
		}
	}
}
