// Package depcheck checks the layering of the project's packages in their
// tests: a package and its dependencies must not reach the packages above
// it.
package depcheck

import (
	"os/exec"
	"strings"
	"testing"
)

// Module is the project's module path.
const Module = "github.com/mgrpo/mgrpo/"

// Forbid fails t for every dependency, direct or indirect, of the packages
// pattern names (as go list takes it, e.g. "." or "./...") that is one of
// forbidden (module-relative paths) or below one; why says what to do
// instead. Tests are not counted. It skips when the go tool is not on PATH.
func Forbid(t *testing.T, pattern string, forbidden []string, why string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH; cannot list the packages' dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", pattern).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pattern, err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(dep, Module)
		if !ok {
			continue
		}
		for _, f := range forbidden {
			if rel == f || strings.HasPrefix(rel, f+"/") {
				t.Errorf("%s depends on %s, which it must not import (%s)", pattern, dep, why)
			}
		}
	}
}

// ForbidImports fails t for every package of the project that the packages
// pattern names import directly and that is one of forbidden (module-relative
// paths) or below one; why says what to do instead. Unlike Forbid it lets a
// package reach a forbidden one through another package: it checks what a
// package's own code names. Tests are not counted. It skips when the go tool
// is not on PATH.
func ForbidImports(t *testing.T, pattern string, forbidden []string, why string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH; cannot list the packages' imports")
	}
	out, err := exec.Command(goTool, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, pattern).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pattern, err, out)
	}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		for _, imp := range fields[1:] {
			rel, ok := strings.CutPrefix(imp, Module)
			if !ok {
				continue
			}
			for _, f := range forbidden {
				if rel == f || strings.HasPrefix(rel, f+"/") {
					t.Errorf("%s imports %s, which it must not (%s)", fields[0], imp, why)
				}
			}
		}
	}
}
