package farm

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
		rebuild       bool
		wantErr       string // "" for no error
		// storeFile is a --store sqlite:// file (in the directory), "" for
		// the run directory's own store.db.
		storeFile string
	}{
		{name: "new directory", missing: true},
		{name: "empty directory"},
		{name: "a run's own files", files: []string{"store.db", "summary.jsonl", "tasks.jsonl", ".summary.jsonl.tmp-123", ".step-000001.tmp-9/", "sim-checkpoints/"}},
		{name: "steps without resume", files: []string{"store.db", "step-000001/"}, wantErr: "already holds step-000001"},
		{name: "the user's own files", files: []string{"notes.txt", "data/"}, wantErr: "not a run's (data, notes.txt)"},
		{name: "the user's own files, forced", files: []string{"notes.txt"}, force: true},
		{name: "resume a run", files: []string{"store.db", "step-000001/"}, resume: true},
		{name: "resume a run killed before its first step", files: []string{"store.db"}, resume: true},
		{name: "resume a mistyped directory", missing: true, resume: true, wantErr: "does not exist"},
		{name: "resume a directory without a run", files: []string{"notes.txt"}, resume: true, wantErr: "holds no run"},
		{name: "resume with the store gone", files: []string{"step-000001/"}, resume: true, wantErr: "no store.db"},
		{name: "resume with an empty store beside steps", files: []string{"store.db:empty", "step-000001/"}, resume: true, wantErr: "is empty (0 bytes)"},
		{name: "resume with an empty --store sqlite:// file beside steps", files: []string{"elsewhere.db:empty", "step-000001/"}, resume: true, storeFile: "elsewhere.db", wantErr: "is empty (0 bytes)"},
		{name: "resume with a --store sqlite:// file gone", files: []string{"step-000001/"}, resume: true, storeFile: "elsewhere.db", wantErr: "no /"},
		{name: "resume with a --store sqlite:// file", files: []string{"elsewhere.db", "step-000001/"}, resume: true, storeFile: "elsewhere.db"},
		{name: "resume a run of a --store sqlite:// killed before its first step", files: []string{"elsewhere.db:empty"}, resume: true, storeFile: "elsewhere.db"},
		{name: "the empty store's message names --rebuild-store", files: []string{"store.db:empty", "step-000001/"}, resume: true, wantErr: "--rebuild-store"},
		{name: "the gone store's message names --rebuild-store", files: []string{"step-000001/"}, resume: true, wantErr: "--rebuild-store"},
		{name: "rebuild an empty store beside steps", files: []string{"store.db:empty", "step-000001/"}, resume: true, rebuild: true},
		{name: "rebuild a store gone beside steps", files: []string{"step-000001/"}, resume: true, rebuild: true},
		{name: "rebuild an empty --store sqlite:// file beside steps", files: []string{"elsewhere.db:empty", "step-000001/"}, resume: true, rebuild: true, storeFile: "elsewhere.db"},
		{name: "rebuild a directory without a run", files: []string{"notes.txt"}, resume: true, rebuild: true, wantErr: "holds no run"},
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
			storeFile := ""
			if tt.storeFile != "" {
				storeFile = filepath.Join(dir, tt.storeFile)
			}
			err := OutDir{Dir: dir, Resume: tt.resume, Rebuild: tt.rebuild, Force: tt.force, RunDirStore: tt.storeFile == "", StoreFile: storeFile, Own: []string{"sim-checkpoints"}}.Check()
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
