package llm

import (
	"os/exec"
	"strings"
	"testing"
)

// clientPackages are the project's packages the sim must not depend on,
// tests included: the client side it stands in for, and the JSON fast
// paths that side reads and writes with. A sim sharing them would repeat
// the client's bugs instead of catching them (see doc.go, "Independence").
var clientPackages = []string{
	"github.com/mgrpo/mgrpo/agents",
	"github.com/mgrpo/mgrpo/tools",
	"github.com/mgrpo/mgrpo/rollout",
	"github.com/mgrpo/mgrpo/bench",
	"github.com/mgrpo/mgrpo/store",
	"github.com/mgrpo/mgrpo/trainer_bridge",
	"github.com/mgrpo/mgrpo/cmd",
	"github.com/mgrpo/mgrpo/internal/jsonfast",
}

// TestSimImportsNoClientPackage fails when any package under sim/, or its
// tests, imports (directly or not) one of clientPackages.
func TestSimImportsNoClientPackage(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go tool is needed to list the sim's dependencies: %v", err)
	}
	const sim = "github.com/mgrpo/mgrpo/sim"
	out, err := exec.Command(goTool, "list", "-deps", "-test", "-f", "{{.ImportPath}}", sim+"/...").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	sawSim := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// A package built for a test is listed as "path [path.test]".
		path, _, _ := strings.Cut(line, " ")
		sawSim = sawSim || path == sim+"/llm"
		for _, client := range clientPackages {
			if path == client || strings.HasPrefix(path, client+"/") {
				t.Errorf("the sim depends on %s (as %q); it must share no code with the client packages", path, line)
			}
		}
	}
	if !sawSim {
		t.Fatalf("go list did not list %s/llm; got:\n%s", sim, out)
	}
}
