package run

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxFuncLines and maxPackageLines keep run the composition root:
// configuration, validation and wiring, one short entry per job, with the
// jobs' logic in the packages that own it. maxPackageLines is a ratchet:
// the goal is 3,000 lines (issue 46); lower it as configuration or job
// logic leaves run, never raise it.
const (
	maxFuncLines    = 80
	maxPackageLines = 3500
)

// runSizes parses run's non-test files and returns their total number of
// lines and each function's length in lines, keyed "file:Name".
func runSizes(t *testing.T) (int, map[string]int) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	total, funcs := 0, map[string]int{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		total += fset.File(f.Pos()).LineCount()
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			key := name + ":" + fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) > 0 {
				key = name + ":(" + recvName(fd.Recv.List[0].Type) + ")." + fd.Name.Name
			}
			funcs[key] = fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
		}
	}
	return total, funcs
}

// recvName names a receiver's type for messages.
func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return "*" + recvName(x.X)
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr:
		return recvName(x.X)
	}
	return "?"
}

// TestRunStaysWiring fails when a function of run grows past maxFuncLines
// or the package past maxPackageLines: split a long entry into named steps,
// and move job logic to the package that owns its concept.
func TestRunStaysWiring(t *testing.T) {
	total, funcs := runSizes(t)
	if total >= maxPackageLines {
		t.Errorf("run's non-test files hold %d lines, want under %d: move job logic to the package that owns it", total, maxPackageLines)
	} else {
		t.Logf("run's non-test files hold %d lines (ratchet %d, goal 3000)", total, maxPackageLines)
	}
	var long []string
	for name, n := range funcs {
		if n > maxFuncLines {
			long = append(long, name)
		}
	}
	sort.Strings(long)
	for _, name := range long {
		t.Errorf("%s is %d lines, want at most %d: split it into named steps", name, funcs[name], maxFuncLines)
	}
	if len(funcs) == 0 {
		t.Fatal("found no functions in run's files: the test reads the wrong directory")
	}
}
