package files

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/trainertest"
)

// pythonSnippet returns the first python code block of
// docs/trainer-files.md.
func pythonSnippet(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "trainer-files.md"))
	if err != nil {
		t.Fatalf("read the format's documentation: %v", err)
	}
	_, rest, ok := strings.Cut(string(doc), "```python\n")
	code, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatal("docs/trainer-files.md holds no python code block")
	}
	return code
}

// TestPythonReaderSnippet runs the documented Python reader on both roles'
// steps and compares what it expands with the batches written.
func TestPythonReaderSnippet(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: the documented Python reader is not checked")
	}
	plan, exec_ := trainertest.MustBatches(t, trainertest.BatchSpec{Run: "py", Step: 2, PolicyVersion: 4, Queries: 3, Seed: 9})
	// A sample stored in the full form (a logprob on a masked token).
	odd := plan.Samples[0]
	odd.Logprobs = append([]float64(nil), odd.Logprobs...)
	odd.Logprobs[0] = -2.5
	plan.Samples = append(plan.Samples, odd)
	dir := t.TempDir()
	driver := pythonSnippet(t) + `
import sys
_, samples = read_step(sys.argv[1])
for s in samples:
    print(json.dumps(s))
`
	script := filepath.Join(t.TempDir(), "reader.py")
	if err := os.WriteFile(script, []byte(driver), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, b := range []trainerbridge.Batch{plan, exec_} {
		mustWrite(t, dir, b)
		out, err := exec.Command(python, script, StepDir(dir, b.Role, b.Step)).Output()
		if err != nil {
			t.Fatalf("python reader on the %s step: %v", b.Role, err)
		}
		var got []rollout.Sample
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 1<<26)
		for sc.Scan() {
			var s rollout.Sample
			dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s); err != nil {
				t.Fatalf("python output line %d: %v", len(got)+1, err)
			}
			got = append(got, s)
		}
		if len(got) != len(b.Samples) {
			t.Fatalf("%s: python expanded %d samples, want %d", b.Role, len(got), len(b.Samples))
		}
		for i := range got {
			if diff := cmp.Diff(b.Samples[i], got[i]); diff != "" {
				t.Fatalf("%s sample %d (-written +python):\n%s", b.Role, i, diff)
			}
		}
	}
}
