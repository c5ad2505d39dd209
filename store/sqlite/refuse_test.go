package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/sqlite"
	"github.com/mgrpo/mgrpo/store/storetest"
)

// Files this store must refuse, and leave as they are.

func TestCorruptFileIsRefusedAndKept(t *testing.T) {
	cases := []struct {
		name string
		make func(t *testing.T, path string)
		want string // in the error
	}{
		{"text file", func(t *testing.T, path string) {
			writeFile(t, path, []byte(strings.Repeat("this is not a database\n", 50)))
		}, "not a SQLite database"},
		{"truncated header", func(t *testing.T, path string) {
			writeFile(t, path, []byte("SQLite format 3\x00\x10\x00"))
		}, "not a SQLite database"},
		{"another application's database", func(t *testing.T, path string) {
			rawExec(t, path, `CREATE TABLE notes (body TEXT)`, `INSERT INTO notes VALUES ('mine')`)
		}, "not an mgrpo store"},
		{"another application's id", func(t *testing.T, path string) {
			rawExec(t, path, `PRAGMA application_id = 42`, `CREATE TABLE notes (body TEXT)`)
		}, "application id 0x2a"},
		{"a store missing a table", func(t *testing.T, path string) {
			newStore(t, path)
			rawExec(t, path, `DROP TABLE cache`)
		}, "lacks table cache"},
		{"a store with a changed table", func(t *testing.T, path string) {
			newStore(t, path)
			rawExec(t, path, `ALTER TABLE runs ADD COLUMN extra TEXT`)
		}, "table runs differs"},
		{"a damaged schema page", func(t *testing.T, path string) {
			newStore(t, path)
			b := readFile(t, path)
			for i := 100; i < 4096 && i < len(b); i++ {
				b[i] = 0xa5
			}
			writeFile(t, path, b)
		}, "malformed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t)
			tc.make(t, path)
			before := readFile(t, path)
			s, err := sqlite.Open(context.Background(), path)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			t.Logf("Open: %v", err)
			if !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("Open: err %v, want ErrCorrupt", err)
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, tc.want) {
				t.Errorf("Open: err %q, want it to name %s and say %q", msg, path, tc.want)
			}
			if after := readFile(t, path); string(after) != string(before) {
				t.Errorf("Open changed the file it refused (%d bytes, was %d)", len(after), len(before))
			}
		})
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	path := tempPath(t)
	newStore(t, path)
	newer := sqlite.SchemaVersion() + 1
	rawExec(t, path, fmt.Sprintf(`PRAGMA user_version = %d`, newer))
	before := readFile(t, path)
	s, err := sqlite.Open(context.Background(), path)
	if err == nil {
		s.Close()
		t.Fatal("Open of a newer schema succeeded")
	}
	if !errors.Is(err, sqlite.ErrNewerSchema) || errors.Is(err, store.ErrCorrupt) {
		t.Errorf("Open: err %v, want ErrNewerSchema (and not ErrCorrupt)", err)
	}
	want := fmt.Sprintf("schema version %d, this binary reads up to version %d", newer, sqlite.SchemaVersion())
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, want) {
		t.Errorf("Open: err %q, want it to name %s and say %q", msg, path, want)
	}
	if string(readFile(t, path)) != string(before) {
		t.Error("Open changed a store of a newer schema")
	}
}

func TestReopenKeepsTheSchema(t *testing.T) {
	path := tempPath(t)
	newStore(t, path)
	s := MustOpen(t, path)
	if _, err := s.Run(storetest.Context(t), "r"); err != nil {
		t.Errorf("Run after a reopen: %v", err)
	}
	var mode string
	if err := rawDB(t, path).QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode %q, %v; want wal", mode, err)
	}
}

func TestOpenRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, path, want string }{
		{"empty", "", "no file named"},
		{"memory", ":memory:", "want the path of a file"},
		{"uri", "file:x.db", "want the path of a file"},
		{"question mark", filepath.Join(dir, "a?b.db"), "'?'"},
		{"directory", dir, "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := sqlite.Open(context.Background(), tc.path)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded", tc.path)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open(%q): err %q, want %q in it", tc.path, err, tc.want)
			}
		})
	}
}

func TestCorruptRowsAreReported(t *testing.T) {
	path := tempPath(t)
	s := MustOpen(t, path)
	c := storetest.Context(t)
	if err := s.PutStats(c, "r", 1, []rollout.QueryStats{{QueryID: "q", MainRewards: []float64{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(c, store.RunRecord{ID: "r", Version: 1, Config: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	for _, q := range []string{`UPDATE query_stats SET main = x'0102'`, `UPDATE runs SET created = 'yesterday'`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.StepStats(c, "r", 1); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("StepStats of a damaged array: err %v, want ErrCorrupt", err)
	}
	if _, err := s.Run(c, "r"); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("Run with a damaged creation time: err %v, want ErrCorrupt", err)
	}
}
