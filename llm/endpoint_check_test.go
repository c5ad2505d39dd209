package llm

import (
	"strings"
	"testing"
	"time"
)

func TestEndpointCheckTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		e       EndpointConfig
		flagged bool
		want    []string
	}{
		{"auto everywhere", EndpointConfig{}, true, nil},
		{"consistent", EndpointConfig{CallTimeout: TimeoutOf(10 * time.Minute), AttemptTimeout: TimeoutOf(time.Minute), IdleTimeout: TimeoutOf(30 * time.Second)}, true, nil},
		{"zero call", EndpointConfig{CallTimeout: TimeoutOf(0)}, true, []string{"planner.call_timeout (--call-timeout): 0s: must be positive"}},
		{"attempt not shorter than call", EndpointConfig{CallTimeout: TimeoutOf(time.Minute), AttemptTimeout: TimeoutOf(time.Minute)}, true,
			[]string{"planner.attempt_timeout (--attempt-timeout): 1m0s: must be shorter than planner.call_timeout (--call-timeout) 1m0s"}},
		{"idle not shorter than attempt, unflagged", EndpointConfig{AttemptTimeout: TimeoutOf(time.Minute), IdleTimeout: TimeoutOf(2 * time.Minute)}, false,
			[]string{"planner.idle_timeout: 2m0s: must be shorter than planner.attempt_timeout 1m0s"}},
		{"negative idle", EndpointConfig{IdleTimeout: TimeoutOf(-time.Second)}, true, []string{"planner.idle_timeout (--idle-timeout): -1s: must be positive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.e.CheckTimeouts("planner", tc.flagged)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %v, want %d", got, len(tc.want))
			}
			for i, err := range got {
				if !strings.HasPrefix(err.Error(), tc.want[i]) {
					t.Errorf("problem %q, want it to start %q", err, tc.want[i])
				}
			}
		})
	}
}
