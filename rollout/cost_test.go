package rollout

import (
	"math"
	"testing"
)

// TestPriceMCPCalls checks that an MCP call is priced by server.tool when
// that has a price, else by its server, and that Add sums the counts.
func TestPriceMCPCalls(t *testing.T) {
	var u Usage
	u.Add(Usage{MCPCalls: map[string]int64{"kb.search": 2, "kb.fetch": 3}})
	u.Add(Usage{MCPCalls: map[string]int64{"kb.search": 1, "calc.add": 10}})
	u.Price(Prices{MCPCall: map[string]float64{"kb": 0.01, "kb.search": 0.1}})
	if want := 3*0.1 + 3*0.01; math.Abs(u.Cost-want) > 1e-12 {
		t.Errorf("cost = %v, want %v", u.Cost, want)
	}
	if got := u.MCPCalls["kb.search"]; got != 3 {
		t.Errorf("kb.search calls = %d, want 3", got)
	}
	if err := (Prices{MCPCall: map[string]float64{"kb": -1}}).Validate(); err == nil {
		t.Error("a negative MCP price validated")
	}
}
