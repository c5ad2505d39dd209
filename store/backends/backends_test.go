package backends

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/sqlite"
)

func TestParseSQLite(t *testing.T) {
	cases := []struct {
		name, url string
		want      sqliteTarget
		err       string // in the error; "" for none
	}{
		{"relative", "sqlite://runs/x/store.db", sqliteTarget{path: "runs/x/store.db"}, ""},
		{"absolute", "sqlite:///abs/path.db", sqliteTarget{path: "/abs/path.db"}, ""},
		{"dot relative", "sqlite://./store.db", sqliteTarget{path: "./store.db"}, ""},
		{"upper-case scheme", "SQLite://a.db", sqliteTarget{path: "a.db"}, ""},
		{"space and colon in the path", "sqlite://my runs:2/x.db", sqliteTarget{path: "my runs:2/x.db"}, ""},
		{"escaped", "sqlite:///tmp/a%23b%3Fc%20d.db", sqliteTarget{path: "/tmp/a#b?c d.db"}, ""},
		{"parameters", "sqlite://x.db?busy_timeout=30s&poll=50ms", sqliteTarget{path: "x.db", busyTimeout: 30 * time.Second, poll: 50 * time.Millisecond}, ""},
		{"no slashes", "sqlite:x.db", sqliteTarget{}, "want sqlite://PATH"},
		{"one slash", "sqlite:/x.db", sqliteTarget{}, "want sqlite://PATH"},
		{"no path", "sqlite://", sqliteTarget{}, "no file path"},
		{"only parameters", "sqlite://?poll=1s", sqliteTarget{}, "no file path"},
		{"bad escape", "sqlite://runs/%zz.db", sqliteTarget{}, `path "runs/%zz.db"`},
		{"fragment", "sqlite://x.db#top", sqliteTarget{}, "a fragment (#top)"},
		{"unknown parameter", "sqlite://x.db?journal=off", sqliteTarget{}, `unknown parameter "journal" (known: busy_timeout, poll)`},
		{"bad duration", "sqlite://x.db?busy_timeout=soon", sqliteTarget{}, `busy_timeout="soon": want a positive duration`},
		{"negative duration", "sqlite://x.db?poll=-1s", sqliteTarget{}, `poll="-1s": want a positive duration`},
		{"repeated parameter", "sqlite://x.db?poll=1s&poll=2s", sqliteTarget{}, "poll given 2 times"},
		{"bad query", "sqlite://x.db?poll=%zz", sqliteTarget{}, `parameters "poll=%zz"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scheme, rest, err := splitScheme(tc.url)
			if err != nil || scheme != "sqlite" {
				t.Fatalf("splitScheme(%q) = %q, %v", tc.url, scheme, err)
			}
			got, err := parseSQLite(rest)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("parse %q: err %v, want %q in it", tc.url, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse %q: %v", tc.url, err)
			}
			if got != tc.want {
				t.Errorf("parse %q = %+v, want %+v", tc.url, got, tc.want)
			}
		})
	}
}

func TestOpenRefuses(t *testing.T) {
	cases := []struct {
		name, url string
		want      string
		secret    string // must not appear in the error
	}{
		{"unknown scheme", "postgres://alice:hunter22@db.example/x", `unsupported store "postgres://db.example/x" (known: sqlite, redis, rediss)`, "hunter22"},
		{"unreachable redis", "redis://:s3cretpw@127.0.0.1:1/0", "127.0.0.1:1", "s3cretpw"},
		{"bad redis URL", "redis://:s3cretpw@h:6379/notadb", "redis://", "s3cretpw"},
		{"no scheme", "runs/x/store.db", `unsupported store "runs/x/store.db" (known: sqlite, redis, rediss): no scheme`, ""},
		{"empty", "", "no scheme", ""},
		{"bad scheme", "1sqlite://x.db", "no scheme", ""},
		{"bad sqlite URL", "sqlite:x.db", `store "sqlite:x.db": want sqlite://PATH`, ""},
		{"key parameter", "mongodb://h/x?api_key=s3cretpw", "api_key=REDACTED", "s3cretpw"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(context.Background(), tc.url)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded", tc.url)
			}
			if s != nil {
				t.Errorf("Open(%q) returned a non-nil store with its error", tc.url)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("Open(%q): err %q, want %q in it", tc.url, msg, tc.want)
			}
			if tc.secret != "" && strings.Contains(msg, tc.secret) {
				t.Errorf("Open(%q): err %q shows the credentials", tc.url, msg)
			}
		})
	}
}

func TestOpenSQLite(t *testing.T) {
	dir := t.TempDir()
	abs := filepath.Join(dir, "abs", "store.db")
	s, err := Open(context.Background(), "sqlite://"+abs+"?busy_timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.(*sqlite.Store); !ok {
		t.Errorf("Open of sqlite:// returned a %T", s)
	}
	if err := s.Set(context.Background(), "k", []byte("v"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Errorf("no file at %s: %v", abs, err)
	}

	t.Chdir(dir)
	rel, err := Open(context.Background(), "sqlite://runs/x/store.db")
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Close()
	if _, err := os.Stat(filepath.Join(dir, "runs", "x", "store.db")); err != nil {
		t.Errorf("a relative sqlite URL made no file under the working directory: %v", err)
	}
}

func TestOpenSQLiteErrorsComeThrough(t *testing.T) {
	path := filepath.Join(t.TempDir(), "not.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 20)), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), "sqlite://"+path)
	if !errors.Is(err, store.ErrCorrupt) || s != nil {
		t.Errorf("Open of a corrupt file = %v, %v; want a nil store and ErrCorrupt", s, err)
	}
}

// FuzzParseSQLite: any path written percent-escaped after sqlite:// comes
// back as it was, and no input makes the parser panic.
func FuzzParseSQLite(f *testing.F) {
	f.Add("runs/x/store.db")
	f.Add("/abs/path.db")
	f.Add("a?b#c%d e")
	f.Fuzz(func(t *testing.T, path string) {
		if _, rest, err := splitScheme("sqlite:" + path); err == nil {
			parseSQLite(rest)
		}
		if path == "" {
			return
		}
		got, err := parseSQLite("//" + url.PathEscape(path))
		if err != nil || got.path != path {
			t.Errorf("parse of the escaped %q = %+v, %v; want the path back", path, got, err)
		}
	})
}

func TestOpenRedis(t *testing.T) {
	url := os.Getenv("MGRPO_TEST_REDIS")
	if url == "" {
		t.Skip("MGRPO_TEST_REDIS is not set (a redis:// URL; .ci/run starts a redis-server and sets it)")
	}
	s, err := Open(context.Background(), url+"?prefix=mgrpo-backends-test:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetPolicyVersion(context.Background(), "backends-test", "planner", 1); err != nil {
		t.Fatalf("the opened Redis store does not work: %v", err)
	}
}

// TestWithPassword: a Redis URL without a password gets the one given
// apart; one with its own keeps it; other schemes and an empty password
// leave the URL alone.
func TestWithPassword(t *testing.T) {
	for _, tc := range []struct{ in, pw, want string }{
		{"redis://h:6379/0", "s3", "redis://:s3@h:6379/0"},
		{"rediss://alice@h:6380/1?prefix=x:", "s3", "rediss://alice:s3@h:6380/1?prefix=x:"},
		{"REDIS://h:6379/0", "s3", "redis://:s3@h:6379/0"},
		{"redis://bob:own@h:6379/0", "s3", "redis://bob:own@h:6379/0"},
		{"redis://h:6379/0", "", "redis://h:6379/0"},
		{"sqlite://runs/x/store.db", "s3", "sqlite://runs/x/store.db"},
	} {
		if got := WithPassword(tc.in, tc.pw); got != tc.want {
			t.Errorf("WithPassword(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
