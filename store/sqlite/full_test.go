package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/store"
)

// TestFullDiskIsUnusable fills a small tmpfs under a store: the write that
// finds the disk full fails with store.ErrUnusable (not a transient error
// to retry), naming SQLite's own message.
func TestFullDiskIsUnusable(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mounting a small tmpfs is not permitted here (%v: %s); CI allows it", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(dir, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateRun(ctx, store.RunRecord{ID: "r", Version: store.RunRecordVersion, Config: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	blob, _ := json.Marshal(strings.Repeat("x", 16<<10))
	for i := range 1000 {
		err = s.PutResult(ctx, "r", 1, fmt.Sprintf("t%d", i), blob)
		if err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("16 MB stored on a 512 kB filesystem")
	}
	if !errors.Is(err, store.ErrUnusable) || store.Transient(err) {
		t.Fatalf("full disk: %v; want store.ErrUnusable, not transient", err)
	}
	if !strings.Contains(err.Error(), "full") {
		t.Errorf("full disk: %q does not say the disk is full", err)
	}
}

// TestErrClass maps SQLite's result codes to the store's classes.
func TestErrClass(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A real SQLITE_READONLY from the driver: a query-only connection
	// refusing a write.
	conn, err := s.w.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA query_only = 1"); err != nil {
		t.Fatal(err)
	}
	_, werr := conn.ExecContext(ctx, "CREATE TABLE t (x)")
	conn.ExecContext(ctx, "PRAGMA query_only = 0")
	if werr == nil {
		t.Fatal("a query-only connection wrote")
	}
	if got := wrapErr(path, "write", werr); !errors.Is(got, store.ErrUnusable) {
		t.Errorf("%v (code %d): want store.ErrUnusable", got, sqliteCode(werr))
	}
}
