package store

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
)

func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"refused connection", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{"busy", fmt.Errorf("put: %w: database is locked", ErrUnavailable), true},
		{"full disk", fmt.Errorf("put: %w: database or disk is full", ErrUnusable), false},
		{"not found", fmt.Errorf("run x: %w", ErrNotFound), false},
		{"corrupt", ErrCorrupt, false},
		{"lease lost", ErrLeaseLost, false},
		{"closed", ErrClosed, false},
		{"canceled", context.Canceled, false},
		{"nil", nil, false},
	} {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", ErrUnusable), ErrUnusable) {
		t.Fatal("wrapping")
	}
}
