package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/storetest"
)

// startServer starts a redis-server of the test's own without persistence
// on a free port, with extra arguments, and returns its address.
func startServer(t *testing.T, extra ...string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args := append([]string{"--port", fmt.Sprint(port), "--save", "", "--appendonly", "no", "--dir", t.TempDir()}, extra...)
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s does not answer", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr
}

// TestErrorClassesLive provokes on real redis-servers the replies
// store/redis classifies: OOM (maxmemory 1, noeviction), READONLY (a
// replica), NOPERM (an ACL user without the store's keys) are
// store.ErrUnusable, BUSY (a script running past the busy threshold) is
// store.ErrUnavailable, retried. It needs MGRPO_TEST_REDIS set (the
// suite's Redis gate) and redis-server in PATH, and skips a case whose
// server refuses CONFIG or ACL.
func TestErrorClassesLive(t *testing.T) {
	testURL(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server in PATH")
	}
	ctx := storetest.Context(t)
	unusable := func(t *testing.T, what string, err error, reply string) {
		t.Helper()
		if !errors.Is(err, store.ErrUnusable) || store.Transient(err) || !strings.Contains(err.Error(), reply) {
			t.Errorf("%s: %v; want store.ErrUnusable (not transient) with Redis's %s reply", what, err, reply)
		}
	}
	t.Run("OOM", func(t *testing.T) {
		addr := startServer(t)
		admin := goredis.NewClient(&goredis.Options{Addr: addr})
		defer admin.Close()
		s := mustOpen(t, "redis://"+addr+"/0")
		defer s.Close()
		if err := s.Enqueue(ctx, "r", storetest.Tasks("r", 2)); err != nil {
			t.Fatal(err)
		}
		if err := admin.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
			t.Skipf("the server refuses CONFIG SET: %v", err)
		}
		if err := admin.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
			t.Skipf("the server refuses CONFIG SET: %v", err)
		}
		unusable(t, "Enqueue", s.Enqueue(ctx, "r", storetest.Tasks("r", 4)), "command not allowed when used memory")
		unusable(t, "PutResult", s.PutResult(ctx, "r", 1, "t", []byte(`{}`)), "command not allowed when used memory")
		unusable(t, "Set", s.Set(ctx, "k", []byte("v"), time.Minute), "command not allowed when used memory")
	})
	t.Run("READONLY", func(t *testing.T) {
		primary := startServer(t)
		host, port, _ := net.SplitHostPort(primary)
		replica := startServer(t, "--replicaof", host, port)
		s := mustOpen(t, "redis://"+replica+"/0")
		defer s.Close()
		unusable(t, "CreateRun on a replica", s.CreateRun(ctx, store.RunRecord{ID: "r", Version: store.RunRecordVersion, Created: time.Now()}), "replica")
		unusable(t, "PutStats on a replica", s.PutStats(ctx, "r", 1, nil), "replica")
	})
	t.Run("NOPERM", func(t *testing.T) {
		addr := startServer(t)
		admin := goredis.NewClient(&goredis.Options{Addr: addr})
		defer admin.Close()
		// The user may touch only keys under other:, not the store's mgrpo:.
		if err := admin.Do(ctx, "ACL", "SETUSER", "limited", "on", ">pw-limited", "~other:*", "+@all").Err(); err != nil {
			t.Skipf("the server refuses ACL SETUSER: %v", err)
		}
		s := mustOpen(t, "redis://limited:pw-limited@"+addr+"/0")
		defer s.Close()
		unusable(t, "Enqueue without key permissions", s.Enqueue(ctx, "r", storetest.Tasks("r", 2)), "permissions")
		unusable(t, "PutStats without key permissions", s.PutStats(ctx, "r", 1, nil), "permissions")
	})
	t.Run("BUSY", func(t *testing.T) {
		addr := startServer(t)
		admin := goredis.NewClient(&goredis.Options{Addr: addr})
		defer admin.Close()
		if err := admin.ConfigSet(ctx, "busy-reply-threshold", "50").Err(); err != nil {
			t.Skipf("the server refuses CONFIG SET: %v", err)
		}
		s := mustOpen(t, "redis://"+addr+"/0?max_retries=-1")
		defer s.Close()
		// A script that never ends keeps the server busy until killed.
		spin := goredis.NewClient(&goredis.Options{Addr: addr, ReadTimeout: -1, MaxRetries: -1})
		defer spin.Close()
		go spin.Eval(context.Background(), "while true do end", nil)
		var err error
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err = s.Counts(ctx, "r")
			if errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !errors.Is(err, store.ErrUnavailable) || !store.Transient(err) || !strings.Contains(err.Error(), "busy") {
			t.Errorf("a busy server: %v; want store.ErrUnavailable, transient, with Redis's BUSY reply", err)
		}
		admin.Do(ctx, "SCRIPT", "KILL")
		eventuallyOK := time.Now().Add(10 * time.Second)
		for {
			if _, err = s.Counts(ctx, "r"); err == nil || time.Now().After(eventuallyOK) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("after SCRIPT KILL: %v; want the server to answer again", err)
		}
	})
}
