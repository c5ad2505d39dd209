// Package depcheck checks the layering of the project's packages in their
// tests: a package and its dependencies must not reach the packages above
// it. It reads the import graph from the source files themselves (with the
// build constraints of this platform), so it needs neither the go tool nor
// the module proxy, and works offline on a fresh clone.
package depcheck

import (
	"fmt"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Module is the project's module path.
const Module = "github.com/mgrpo/mgrpo/"

// Graph is the import graph of the module's own packages, by
// module-relative path ("farm").
type Graph struct {
	// Root is the module's directory.
	Root string
	// imports and testImports are each package's direct imports of the
	// module's packages, from its non-test and its _test.go files.
	imports, testImports map[string][]string
}

// Load reads the import graph of the module that holds the working
// directory.
func Load() (*Graph, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	g := &Graph{Root: root, imports: map[string][]string{}, testImports: map[string][]string{}}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		dir, name := filepath.Split(path)
		if ok, err := build.Default.MatchFile(dir, name); err != nil || !ok {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("depcheck: %w", err)
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		target := g.imports
		if strings.HasSuffix(name, "_test.go") {
			target = g.testImports
		}
		if _, ok := target[pkg]; !ok {
			target[pkg] = nil
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if dep, ok := strings.CutPrefix(p, Module); ok && !slices.Contains(target[pkg], dep) {
				target[pkg] = append(target[pkg], dep)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// moduleRoot returns the directory of the go.mod above the working
// directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("depcheck: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Packages returns the module's packages that pattern names: "x" alone, or
// "x/..." for x and every package below it.
func (g *Graph) Packages(pattern string) []string {
	var out []string
	for pkg := range g.imports {
		if Matches(pattern, pkg) {
			out = append(out, pkg)
		}
	}
	slices.Sort(out)
	return out
}

// Matches reports whether pkg is named by pattern: "x" names x alone,
// "x/..." names x and every package below it.
func Matches(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

// Deps returns pkg's dependencies among the module's packages, direct or
// not, each with the chain of imports that reaches it ("a → b → c"). With
// tests, the _test.go files of pkg (not of its dependencies) count too.
func (g *Graph) Deps(pkg string, tests bool) map[string]string {
	chains := map[string]string{}
	var visit func(p, chain string)
	visit = func(p, chain string) {
		for _, dep := range g.imports[p] {
			if _, seen := chains[dep]; seen || dep == pkg {
				continue
			}
			chains[dep] = chain + " → " + dep
			visit(dep, chains[dep])
		}
	}
	visit(pkg, pkg)
	if tests {
		for _, dep := range g.testImports[pkg] {
			if _, seen := chains[dep]; !seen && dep != pkg {
				chains[dep] = pkg + " (tests) → " + dep
				visit(dep, chains[dep])
			}
		}
	}
	return chains
}

// Rule says what a set of packages must not depend on.
type Rule struct {
	// Packages names the packages the rule holds for ("x" or "x/...").
	Packages string
	// Forbidden are the patterns they must not reach, directly or not.
	Forbidden []string
	// Tests extends the rule to the packages' own tests.
	Tests bool
	// Direct checks only what the packages' own code imports, letting them
	// reach a forbidden package through another one.
	Direct bool
	// Why says what to do instead, for the failure message.
	Why string
}

// Check fails t for every dependency that breaks r, naming the chain of
// imports that reaches it.
func (g *Graph) Check(t testing.TB, r Rule) {
	t.Helper()
	pkgs := g.Packages(r.Packages)
	if len(pkgs) == 0 {
		t.Errorf("%s: no package of the module matches", r.Packages)
	}
	for _, pkg := range pkgs {
		deps := g.Deps(pkg, r.Tests)
		if r.Direct {
			deps = map[string]string{}
			imports := g.imports[pkg]
			if r.Tests {
				imports = append(slices.Clone(imports), g.testImports[pkg]...)
			}
			for _, dep := range imports {
				deps[dep] = pkg + " imports " + dep
			}
		}
		for dep, chain := range deps {
			for _, f := range r.Forbidden {
				if Matches(f, dep) && !Matches(r.Packages, dep) {
					t.Errorf("%s must not depend on %s (%s): %s", pkg, dep, r.Why, chain)
				}
			}
		}
	}
}

// ForbidImports is Forbid for the packages' own imports only: they may
// reach a forbidden package through another package.
func ForbidImports(t *testing.T, pattern string, forbidden []string, why string) {
	t.Helper()
	forbid(t, pattern, Rule{Forbidden: forbidden, Why: why, Direct: true})
}

// Forbid fails t for every dependency, direct or indirect, of the packages
// pattern names relative to the working directory ("." or "./...") that
// is one of forbidden (module-relative patterns: "x" alone or "x/..."); why
// says what to do instead. Tests are not counted.
func Forbid(t *testing.T, pattern string, forbidden []string, why string) {
	t.Helper()
	forbid(t, pattern, Rule{Forbidden: forbidden, Why: why})
}

// forbid checks r for the packages pattern names relative to the working
// directory.
func forbid(t *testing.T, pattern string, r Rule) {
	t.Helper()
	g, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(g.Root, wd)
	if err != nil {
		t.Fatal(err)
	}
	pkg := filepath.ToSlash(rel)
	switch pattern {
	case ".":
	case "./...":
		pkg += "/..."
	default:
		t.Fatalf("depcheck.Forbid: pattern %q: want . or ./...", pattern)
	}
	r.Packages = pkg
	g.Check(t, r)
}

// Order says, for each top-level folder of the module, the top-level
// folders directly below it. A folder may import the folders below it and
// theirs, and nothing else outside itself: no import runs upward or
// sideways.
type Order map[string][]string

// Below returns every top-level folder below top, directly or not.
func (o Order) Below(top string) map[string]bool {
	below := map[string]bool{}
	var visit func(string)
	visit = func(f string) {
		for _, b := range o[f] {
			if !below[b] {
				below[b] = true
				visit(b)
			}
		}
	}
	visit(top)
	return below
}

// topFolder returns the top-level folder of a module-relative package path.
func topFolder(pkg string) string {
	top, _, _ := strings.Cut(pkg, "/")
	return top
}

// CheckOrder fails t for every direct import of a package's own (non-test)
// files that crosses from one top-level folder to another not below it in
// o, and for every top-level folder of the module that o does not place.
// With testExtras, a package's _test.go files may also import those
// folders (test fixtures, such as the simulated world).
func (g *Graph) CheckOrder(t testing.TB, o Order, testExtras ...string) {
	t.Helper()
	seen := map[string]bool{}
	for pkg := range g.imports {
		seen[topFolder(pkg)] = true
	}
	for top := range seen {
		if _, ok := o[top]; !ok && top != "." {
			t.Errorf("top-level folder %s is not placed in the layering order: add it to the order in internal/depcheck", top)
		}
	}
	check := func(pkg string, imports []string, extras []string, what string) {
		from := topFolder(pkg)
		below := o.Below(from)
		for _, dep := range imports {
			to := topFolder(dep)
			if to == from || below[to] || slices.Contains(extras, to) {
				continue
			}
			t.Errorf("%s%s imports %s: %s is not below %s in the layering order (%s may import only %s)",
				pkg, what, dep, to, from, from, strings.Join(sortedKeys(below), ", "))
		}
	}
	for pkg, imports := range g.imports {
		check(pkg, imports, nil, "")
	}
	for pkg, imports := range g.testImports {
		check(pkg, imports, testExtras, " (tests)")
	}
}

// sortedKeys returns m's keys in order, or "nothing" for none.
func sortedKeys(m map[string]bool) []string {
	if len(m) == 0 {
		return []string{"nothing"}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
