package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestStartFailures checks that a server that cannot start, or that
// prints garbage on stdout, is a clear error naming it, at once.
func TestStartFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ServerConfig
		want []string
	}{
		{"missing command", ServerConfig{Name: "gone", Command: "/nonexistent/mcp-server"}, []string{"mcp server gone", "start /nonexistent/mcp-server"}},
		{"garbage on stdout", ServerConfig{Name: "noisy", Command: "sh", Args: []string{"-c", "echo 'Server ready on stdio!'; echo booting >&2; sleep 60"}},
			[]string{"mcp server noisy", "not a JSON-RPC message", "Server ready on stdio!", "booting"}},
		{"exits at once", ServerConfig{Name: "dies", Command: "sh", Args: []string{"-c", "echo 'fatal: no config' >&2; exit 3"}},
			[]string{"mcp server dies", "exit status 3", "fatal: no config"}},
		{"no command or url", ServerConfig{Name: "empty"}, []string{"mcp server empty", "command or url required"}},
		{"url that does not answer", ServerConfig{Name: "far", URL: "http://127.0.0.1:1/mcp"}, []string{"mcp server far", "connect to http://127.0.0.1:1/mcp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			s, err := Open(ctx, Config{Servers: []ServerConfig{tc.cfg}})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if el := time.Since(start); el > 15*time.Second {
				t.Errorf("took %v: a bad server must fail fast", el)
			}
			if tc.name == "garbage on stdout" && !errors.Is(err, ErrGarbage) {
				t.Errorf("error %v is not ErrGarbage", err)
			}
		})
	}
}

func TestTailKeepsLastLines(t *testing.T) {
	tl := newTail(2, 100)
	_, _ = tl.Write([]byte("one\ntwo\nthr"))
	_, _ = tl.Write([]byte("ee\nfour"))
	if got, want := tl.String(), "two\nthree\nfour"; got != want {
		t.Errorf("tail = %q, want %q", got, want)
	}
}

// TestBackoffPastDeadlineFailsFast checks that a call arriving while a
// server that failed to start waits out a backoff longer than the call's
// deadline fails at once with the start's error, not with its own timeout.
func TestBackoffPastDeadlineFailsFast(t *testing.T) {
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", freePort(t)) // nothing listens
	s := newServer(ServerConfig{Name: "down", URL: url}, slog.New(slog.DiscardHandler))
	defer s.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.session(ctx); err == nil {
		t.Fatal("session to a port nobody listens on succeeded")
	}
	s.mu.Lock()
	s.retryAt = time.Now().Add(time.Hour) // a backoff far past any call's deadline
	s.mu.Unlock()
	short, cancelShort := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelShort()
	_, err := s.session(short)
	if err == nil || short.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("session during the backoff = %v (ctx %v), want the last start's error at once", err, short.Err())
	}
	for _, w := range []string{"mcp server down", "connect to " + url, "next start in"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}
