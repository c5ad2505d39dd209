package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckOutDir(t *testing.T) {
	tests := []struct {
		name          string
		files         []string // relative paths; a trailing / makes a directory
		missing       bool
		resume, force bool
		wantErr       string // "" for no error
	}{
		{name: "new directory", missing: true},
		{name: "empty directory"},
		{name: "a run's own files", files: []string{"store.db", "summary.jsonl", "tasks.jsonl", ".summary.jsonl.tmp-123", ".step-000001.tmp-9/"}},
		{name: "steps without resume", files: []string{"store.db", "step-000001/"}, wantErr: "already holds step-000001"},
		{name: "the user's own files", files: []string{"notes.txt", "data/"}, wantErr: "not a run's (data, notes.txt)"},
		{name: "the user's own files, forced", files: []string{"notes.txt"}, force: true},
		{name: "resume a run", files: []string{"store.db", "step-000001/"}, resume: true},
		{name: "resume a run killed before its first step", files: []string{"store.db"}, resume: true},
		{name: "resume a mistyped directory", missing: true, resume: true, wantErr: "does not exist"},
		{name: "resume a directory without a run", files: []string{"notes.txt"}, resume: true, wantErr: "holds no run"},
		{name: "resume with the store gone", files: []string{"step-000001/"}, resume: true, wantErr: "no store.db"},
		{name: "resume with an empty store beside steps", files: []string{"store.db:empty", "step-000001/"}, resume: true, wantErr: "is empty (0 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			if !tt.missing {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range tt.files {
				path, content := filepath.Join(dir, strings.TrimSuffix(f, ":empty")), "x"
				if strings.HasSuffix(f, ":empty") {
					content = ""
				}
				var err error
				if strings.HasSuffix(f, "/") {
					err = os.MkdirAll(path, 0o755)
				} else {
					err = os.WriteFile(path, []byte(content), 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			err := checkOutDir(dir, tt.resume, tt.force, true)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			case err != nil && !strings.Contains(err.Error(), dir):
				t.Errorf("error %v does not name the directory", err)
			}
		})
	}
}
