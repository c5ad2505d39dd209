package gateway

import "testing"

func TestSettingsEnabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Settings
		want bool
	}{
		{"unset", Settings{}, false},
		{"a public URL alone does nothing", Settings{URL: "http://h:1"}, false},
		{"pull", Settings{Addr: "127.0.0.1:8700"}, true},
		{"push", Settings{AgentURL: "http://agent:9"}, true},
	} {
		if got := tc.s.Enabled(); got != tc.want {
			t.Errorf("%s: Enabled() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
