package mcp

import (
	"sort"
	"strings"

	"github.com/mgrpo/mgrpo/internal/problems"
)

// CheckPrices reports, in key order, every price of MCP calls (the
// prices.mcp_call key: by server or server.tool) that names no server of
// ss.
func (ss Specs) CheckPrices(prices map[string]float64) []error {
	var p problems.List
	keys := make([]string, 0, len(prices))
	for k := range prices {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		server, _, _ := strings.Cut(k, ".")
		if ss.Index(server) < 0 {
			p.Add("prices.mcp_call."+k, "", "names no server of tools.mcp (unknown server %q)", server)
		}
	}
	return p
}
