package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayOfARecordedRun records fixed-seed sim runs (rollout, and train
// in mode mgrpo) with --record: their step files are those of the same
// runs without it; replayed with the sim off (no engine, no web), every
// step file comes out byte-identical; after one prompt template changes,
// the replay exits 1 naming the first differing request of each rollout
// with its diff.
func TestReplayOfARecordedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm")
	}
	runs := []struct {
		name string
		args []string
	}{
		{"rollout", []string{"rollout", "--sim", "--seed", "3", "--steps", "2", "--batch-size", "3", "--group-size", "4"}},
		{"train", []string{"train", "--sim", "--mode", "mgrpo", "--seed", "3", "--steps", "2", "--batch-size", "3", "--group-size", "4"}},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			root := t.TempDir()
			run := func(name string, extra ...string) string {
				return runOnUsualPorts(t, root, name, func(out string) error {
					args := append(append(append([]string{"--log-level", "error"}, r.args...), "--run", "demo"), extra...)
					if code, _, stderr := runCLI(t, append(args, "--out", out)...); code != 0 {
						t.Fatalf("%s: exit %d: %s", name, code, stderr)
					}
					return nil
				})
			}
			plain, recorded := run("plain"), run("recorded", "--record")
			want := stepFiles(t, plain)
			for name, b := range stepFiles(t, recorded) {
				if string(want[name]) != string(b) {
					t.Errorf("%s: --record changed the step file", name)
				}
			}
			replayed := filepath.Join(root, "replayed")
			code, stdout, stderr := runCLI(t, "--log-level", "error", "replay", recorded, "--out", replayed)
			if code != 0 {
				t.Fatalf("replay: exit %d: %s %s", code, stdout, stderr)
			}
			got := stepFiles(t, replayed)
			if len(got) != len(want) {
				t.Errorf("%d step files, want %d", len(got), len(want))
			}
			for name, b := range want {
				if string(got[name]) != string(b) {
					t.Errorf("%s differs after the replay", name)
				}
			}
			cfg := filepath.Join(root, "prompts.yaml")
			if err := os.WriteFile(cfg, []byte("prompts:\n  executor_user: \"Subtask (be brief): {{.Task}}\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr = runCLI(t, "--log-level", "error", "replay", recorded, "--out", filepath.Join(root, "changed"), "--config", cfg)
			if code != 1 || !strings.Contains(stderr, "the recording does not hold") {
				t.Fatalf("replay with a changed prompt: exit %d, stderr %q: want 1", code, stderr)
			}
			first, _, _ := strings.Cut(strings.SplitN(stdout, "not recorded: ", 2)[1], "\nnot recorded: ")
			for _, want := range []string{"step 1, query ", ", rollout ", "role executor, turn 0", "-       \"content\": \"", "+       \"content\": \"Subtask (be brief): "} {
				if !strings.Contains(first, want) {
					t.Errorf("first miss reported as\n%s\nwant it to hold %q", first, want)
				}
			}
			if _, err := os.Stat(filepath.Join(root, "changed", "replay-misses.jsonl")); err != nil {
				t.Errorf("no replay-misses.jsonl: %v", err)
			}
		})
	}
}

// TestReplayRefusesARunWithoutRecording: a run recorded without --record,
// a corrupt store and a directory that is no run exit 2, writing nothing.
func TestReplayRefusesARunWithoutRecording(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm")
	}
	root := t.TempDir()
	plain := filepath.Join(root, "plain")
	rescoreSimRun(t, plain, "--steps", "1")
	corrupt := filepath.Join(root, "corrupt")
	if err := os.CopyFS(corrupt, os.DirFS(plain)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"store.db-wal", "store.db-shm"} {
		os.Remove(filepath.Join(corrupt, f))
	}
	if err := os.WriteFile(filepath.Join(corrupt, "store.db"), []byte(strings.Repeat("garbage ", 600)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, dir, want string }{
		{"no recording", plain, "holds no recording"},
		{"corrupt store", corrupt, "store"},
		{"no run", t.TempDir(), "not a run directory"},
	} {
		out := filepath.Join(root, "out-"+strings.ReplaceAll(c.name, " ", "-"))
		code, _, stderr := runCLI(t, "replay", c.dir, "--out", out)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q: want 2 and %q", c.name, code, stderr, c.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: %s written", c.name, out)
		}
	}
}
