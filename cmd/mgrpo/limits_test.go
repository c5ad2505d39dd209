package main

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/bench/view"
	"github.com/mgrpo/mgrpo/internal/httpserve"
	"github.com/mgrpo/mgrpo/internal/httpserve/httpservetest"
	"github.com/mgrpo/mgrpo/rollout"
)

// shortLimits are Short's limits with timeouts a test waits out quickly.
func shortLimits() httpserve.Limits {
	l := httpserve.Short()
	l.ReadHeaderTimeout, l.BodyTimeout, l.IdleTimeout = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	return l
}

// TestMetricsServerClosesSlowClients checks that the --metrics-addr server
// closes slow-loris connections.
func TestMetricsServerClosesSlowClients(t *testing.T) {
	_, m, err := startMetricsWithin("127.0.0.1:0", slog.New(slog.DiscardHandler), shortLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer m.stop()
	httpservetest.CheckSlowClients(t, m.addr, "/metrics", "/metrics", 300*time.Millisecond)
}

// TestViewServerClosesSlowClients checks that mgrpo view's server closes
// slow-loris connections.
func TestViewServerClosesSlowClients(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, rollout.SummaryFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := view.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveUntilDone(ctx, viewServer(h, shortLimits()), l) }()
	httpservetest.CheckSlowClients(t, l.Addr().String(), "/", "/", 300*time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}
