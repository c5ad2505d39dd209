package mcp

import "testing"

func TestSpecsCheckPrices(t *testing.T) {
	ss := Specs{{Name: "kb"}, {Name: "web"}}
	got := ss.CheckPrices(map[string]float64{"kb": 0.1, "kb.search": 0.2, "zz.x": 1, "docs": 2, "web.fetch": 0})
	want := []string{
		`prices.mcp_call.docs: names no server of tools.mcp (unknown server "docs")`,
		`prices.mcp_call.zz.x: names no server of tools.mcp (unknown server "zz")`,
	}
	if len(got) != len(want) {
		t.Fatalf("problems %v, want %d", got, len(want))
	}
	for i, err := range got {
		if err.Error() != want[i] {
			t.Errorf("problem %q, want %q", err, want[i])
		}
	}
	if p := (Specs{}).CheckPrices(nil); len(p) != 0 {
		t.Errorf("no prices: %v", p)
	}
}
