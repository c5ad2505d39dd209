package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/sim"
)

var updateIdentity = flag.Bool("update-identity", false, "rewrite testdata/identity.sha256 from this build's step files")

// identityRuns are the fixed-seed sim runs whose step files must keep their
// bytes across refactorings: `mgrpo rollout --sim` and `mgrpo train --sim`
// in the paper's three modes, each --seed 3 --batch-size 4 --group-size 4
// (rollout: --steps 2; train: --steps 3). Streamed and asynchronous runs are
// left out: which groups a streamed step takes, and which weights serve a
// turn in flight across an update, depend on timing by design.
var identityRuns = []struct {
	name string
	args []string
}{
	{"rollout", []string{"rollout", "--sim", "--seed", "3", "--steps", "2", "--batch-size", "4", "--group-size", "4"}},
	{"train-mgrpo", []string{"train", "--sim", "--mode", "mgrpo", "--seed", "3", "--steps", "3", "--batch-size", "4", "--group-size", "4"}},
	{"train-frozen-sub", []string{"train", "--sim", "--mode", "frozen-sub", "--seed", "3", "--steps", "3", "--batch-size", "4", "--group-size", "4"}},
	{"train-single", []string{"train", "--sim", "--mode", "single", "--seed", "3", "--steps", "3", "--batch-size", "4", "--group-size", "4"}},
}

// TestStepFilesAreByteIdentical runs identityRuns and compares the sha256
// of every step file with testdata/identity.sha256, recorded before the
// composition root moved to run/. The sim's web URL appears in prompts, so
// a run counts only when the world got its usual ports; while another
// process holds them, the run is retried.
func TestStepFilesAreByteIdentical(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm and the sim trainer")
	}
	root := t.TempDir()
	got := map[string]string{}
	for _, r := range identityRuns {
		out := runOnUsualPorts(t, root, r.name, func(out string) error {
			args := append([]string{"--log-level", "error"}, r.args...)
			if code, _, stderr := runCLI(t, append(args, "--out", out)...); code != 0 {
				return fmt.Errorf("exit %d: %s", code, stderr)
			}
			return nil
		})
		files, err := filepath.Glob(filepath.Join(out, "step-*", "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			rel, _ := filepath.Rel(root, f)
			got[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		}
	}
	golden := filepath.Join("testdata", "identity.sha256")
	if *updateIdentity {
		var lines []string
		for f, sum := range got {
			lines = append(lines, sum+"  "+f)
		}
		slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
		if err := os.WriteFile(golden, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readSums(t, golden)
	for f, sum := range want {
		switch g, ok := got[f]; {
		case !ok:
			t.Errorf("%s: not written", f)
		case g != sum:
			t.Errorf("%s: sha256 %s, want %s (the step file's bytes changed)", f, g, sum)
		}
	}
	for f := range got {
		if _, ok := want[f]; !ok {
			t.Errorf("%s: written, but not in %s", f, golden)
		}
	}
}

// runOnUsualPorts runs job into root/name until its world served on the
// sim's fixed ports (its rollouts.jsonl names the web's usual address), and
// returns the output directory.
func runOnUsualPorts(t *testing.T, root, name string, job func(out string) error) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for attempt := 1; ; attempt++ {
		out := filepath.Join(root, fmt.Sprintf("attempt-%d", attempt), name)
		if err := job(out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := os.ReadFile(filepath.Join(out, "step-000001", "rollouts.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), sim.DefaultWebAddr) {
			final := filepath.Join(root, name)
			if err := os.Rename(out, final); err != nil {
				t.Fatal(err)
			}
			return final
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the sim's ports (%s…) stayed taken by other processes for 5 minutes", name, sim.DefaultLLMAddr)
		}
		time.Sleep(time.Duration(attempt) * 500 * time.Millisecond)
	}
}

// readSums reads a sha256sum file: "HEX  PATH" per line.
func readSums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("%s: malformed line %q", path, sc.Text())
		}
		sums[file] = sum
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sums
}
