package main

import (
	"slices"
	"testing"
)

func TestHoistGlobalFlags(t *testing.T) {
	tests := []struct{ in, want []string }{
		{[]string{"mgrpo", "rollout", "--log-level", "warn", "--sim"}, []string{"mgrpo", "--log-level", "warn", "rollout", "--sim"}},
		{[]string{"mgrpo", "--log-format", "json", "rollout", "--log-level=debug"}, []string{"mgrpo", "--log-format", "json", "--log-level=debug", "rollout"}},
		{[]string{"mgrpo", "tool", "search", "--query", "q", "--", "--log-level", "x"}, []string{"mgrpo", "tool", "search", "--query", "q", "--", "--log-level", "x"}},
		{[]string{"mgrpo"}, []string{"mgrpo"}},
	}
	for _, tt := range tests {
		if got := hoistGlobalFlags(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("hoistGlobalFlags(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
