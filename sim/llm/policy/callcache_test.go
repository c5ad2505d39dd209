package policy

import (
	"reflect"
	"testing"
)

// TestParseCallCachedMatches checks cached tool-call parses (first and
// repeated look-ups, and without a cache) against parseCall.
func TestParseCallCachedMatches(t *testing.T) {
	calls := []ToolCall{
		{ID: "1", Name: ToolSearch, Arguments: `{"query":["Velmora LABS founder","x"]}`},
		{ID: "2", Name: ToolVisit, Arguments: `{"url":"https://w.sim/a","goal":"Founder"}`},
		{ID: "3", Name: ToolDelegate, Arguments: `{"task":"Find the capital"}`},
		{ID: "4", Name: ToolSearch, Arguments: `{"query":`},
		{ID: "5", Name: "other", Arguments: `{}`},
	}
	cc := newCallCache(1 << 20)
	for _, tc := range calls {
		want, wantOK := parseCall(tc)
		for _, c := range []*callCache{cc, cc, nil} {
			got, ok := parseCallCached(c, tc)
			if ok != wantOK || !reflect.DeepEqual(got, want) {
				t.Fatalf("%+v: parseCallCached = %+v, %v; parseCall %+v, %v", tc, got, ok, want, wantOK)
			}
		}
	}
}
