package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
)

// TestTrainSimAsyncRepeats runs an asynchronous fixed-step training run in
// the sim world (--max-staleness 1: step t+1's rollouts run while step t
// trains and its weights are synced) twice and wants every step file byte
// for byte equal, and every summary line equal but for the fields that
// measure time (see timingFree). The sim servers serve each turn with the
// version its step was scheduled at (the pin), so which weights answer a
// turn does not depend on when the sync landed.
func TestTrainSimAsyncRepeats(t *testing.T) {
	if testing.Short() {
		t.Skip("trains in the sim world twice")
	}
	out := filepath.Join(t.TempDir(), "out")
	args := []string{"train", "--sim", "--seed", "3", "--steps", "4", "--batch-size", "4", "--group-size", "4",
		"--max-staleness", "1", "--sim-trainer-step-time", "300ms", "--run", "async-repeat", "--out", out}
	var runs [2]map[string][]byte
	for i := range runs {
		// Taken ports put other URLs in the prompts: nothing to compare.
		skipUnlessSimPortsFree(t)
		if code, _, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("run %d: exit %d:\n%s", i, code, stderr)
		}
		runs[i] = stepFiles(t, out)
		runs[i][rollout.SummaryFile] = []byte(mustRead(t, filepath.Join(out, rollout.SummaryFile)))
		if err := os.RemoveAll(out); err != nil {
			t.Fatal(err)
		}
	}
	if len(runs[0]) == 0 {
		t.Fatal("the run wrote no step files")
	}
	names := make([]string, 0, len(runs[0]))
	for name := range runs[0] {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		a, b := runs[0][name], runs[1][name]
		if name == rollout.SummaryFile {
			a, b = timingFree(t, a), timingFree(t, b)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs of the same command:\n%s", name, firstDiff(a, b))
		}
	}
	if len(runs[1]) != len(runs[0]) {
		t.Errorf("the runs wrote %d and %d files", len(runs[0]), len(runs[1]))
	}
}

// skipUnlessSimPortsFree skips the test when one of the sim's fixed ports
// is taken (a world started on others writes other URLs into the prompts).
func skipUnlessSimPortsFree(t *testing.T) {
	t.Helper()
	for port := 18000; port <= 18003; port++ {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Skipf("the sim's port %d is taken: %v", port, err)
		}
		l.Close()
	}
}

// timingFree returns summary.jsonl's lines without the fields that measure
// time or depend on it however the run went: durations (*_seconds), rates
// (*_per_second) and the tool cache's hits and misses (two rollouts that
// ask for one page at once both miss).
func timingFree(t *testing.T, summary []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, line := range bytes.Split(bytes.TrimSpace(summary), []byte("\n")) {
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("summary line %q: %v", line, err)
		}
		b, err := json.Marshal(dropTiming(v))
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(b, '\n'))
	}
	return out.Bytes()
}

func dropTiming(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if strings.HasSuffix(k, "_seconds") || strings.HasSuffix(k, "_per_second") || strings.HasPrefix(k, "tool_cache") {
				delete(x, k)
				continue
			}
			x[k] = dropTiming(e)
		}
	case []any:
		for i, e := range x {
			x[i] = dropTiming(e)
		}
	}
	return v
}

// firstDiff describes the first line where a and b differ.
func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < max(len(la), len(lb)); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			j := 0
			for j < min(len(x), len(y)) && x[j] == y[j] {
				j++
			}
			lo := max(0, j-80)
			return fmt.Sprintf("line %d, byte %d: %q\nvs %q", i+1, j, x[lo:min(len(x), j+80)], y[lo:min(len(y), j+80)])
		}
	}
	return "(equal lines, different lengths)"
}
