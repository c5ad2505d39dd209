package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/internal/yamlstrict"
)

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

func TestSettingsCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Settings
		want []string
	}{
		{"unset", Settings{}, nil},
		{"push with a local gateway", Settings{AgentURL: "http://agent:9", Addr: "127.0.0.1:8700"}, nil},
		{"every interface with a public URL", Settings{Addr: "0.0.0.0:8700", URL: "http://box:8700"}, nil},
		{"not HOST:PORT", Settings{Addr: "8700"}, []string{`gateway.addr (--gateway-addr): "8700": want HOST:PORT`}},
		{"every interface without a public URL", Settings{Addr: ":8700"}, []string{`gateway.addr (--gateway-addr): ":8700" listens on every interface`}},
		{"URLs not http", Settings{AgentURL: "ftp://a", URL: "box:1", Addr: "[::]:1"}, []string{
			`gateway.url (--gateway-url): "box:1": want an http:// or https:// URL`,
			`gateway.agent_url (--agent-url): "ftp://a": want an http:// or https:// URL`}},
		{"a public URL alone", Settings{URL: "http://box:1"}, []string{"gateway.url (--gateway-url): set with --agent-url (push) or --gateway-addr (pull)"}},
		{"negative lease", Settings{Addr: "127.0.0.1:1", Lease: yamlstrict.Duration{Duration: -time.Second}}, []string{"gateway.lease: -1s: must not be negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.s.Check()
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
