package run

import (
	"strings"
	"testing"
	"time"
)

func TestCheckGateway(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    GatewayConfig
		want string // "" for valid
	}{
		{"off", GatewayConfig{}, ""},
		{"push", GatewayConfig{AgentURL: "http://127.0.0.1:8800"}, ""},
		{"pull", GatewayConfig{Addr: "127.0.0.1:8700", URL: "https://gw.example:443"}, ""},
		{"bad addr", GatewayConfig{Addr: "8700"}, "gateway.addr (--gateway-addr)"},
		{"every interface without a URL", GatewayConfig{Addr: "0.0.0.0:8700"}, "--gateway-url http://HOSTNAME:8700"},
		{"every interface, IPv6, without a URL", GatewayConfig{Addr: "[::]:8700"}, "--gateway-url"},
		{"no host without a URL", GatewayConfig{Addr: ":8700"}, "every interface"},
		{"every interface with a URL", GatewayConfig{Addr: "0.0.0.0:8700", URL: "http://gw.lan:8700"}, ""},
		{"bad agent url", GatewayConfig{AgentURL: "127.0.0.1:8800"}, "gateway.agent_url (--agent-url)"},
		{"url alone", GatewayConfig{URL: "http://x:1"}, "gateway.url (--gateway-url)"},
		{"negative lease", GatewayConfig{AgentURL: "http://a:1", Lease: Duration{Duration: -time.Second}}, "gateway.lease"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Gateway = tc.g
			err := c.CheckGateway()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckGateway: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("CheckGateway: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// TestRunRecordLeavesOutAnUnsetGateway keeps the run record of a run
// without the gateway as it was (resume compares records), and leaves the
// per-process URL out of one with it.
func TestRunRecordLeavesOutAnUnsetGateway(t *testing.T) {
	c := DefaultConfig()
	rec, err := c.RunRecordConfig()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec), "Gateway") {
		t.Errorf("run record %s mentions the gateway, which is unset", rec)
	}
	c.Gateway = GatewayConfig{AgentURL: "http://agent:1", URL: "http://gw:2"}
	rec, _ = c.RunRecordConfig()
	if !strings.Contains(string(rec), "http://agent:1") || strings.Contains(string(rec), "http://gw:2") {
		t.Errorf("run record %s: want the agent URL, not the gateway's own URL", rec)
	}
}

// TestGatewayRunNeedsNoSearchProvider checks that a gateway run, whose
// agent calls its own tools, is not refused for the farm's search
// settings, while a run of the built-in agents still is.
func TestGatewayRunNeedsNoSearchProvider(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gateway GatewayConfig
		refused bool
	}{
		{"built-in agents", GatewayConfig{}, true},
		{"push gateway", GatewayConfig{AgentURL: "http://127.0.0.1:8800"}, false},
		{"pull gateway", GatewayConfig{Addr: "127.0.0.1:8700"}, false},
	} {
		c := DefaultConfig()
		c.Gateway = tc.gateway
		c.Search.Provider = ""
		err := c.Validate()
		if got := err != nil && strings.Contains(err.Error(), "search.provider"); got != tc.refused {
			t.Errorf("%s: Validate %v, want the search provider refused: %v", tc.name, err, tc.refused)
		}
		if c.farmRunsTools() == tc.gateway.Enabled() {
			t.Errorf("%s: farmRunsTools %v", tc.name, c.farmRunsTools())
		}
	}
}
