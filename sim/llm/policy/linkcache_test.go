package policy

import (
	"reflect"
	"strings"
	"testing"
)

// TestLinkCacheMatchesParse checks that cached links (first and repeated
// look-ups) are parseLinks's, with their lower-cased forms.
func TestLinkCacheMatchesParse(t *testing.T) {
	texts := []string{
		"1. [Velmora LABS | Atlas](https://w.sim/a)\n   ... Founder: Ida MARSTON ...\n2. [B](https://w.sim/b)\nsnippet",
		`{"organic":[{"title":"ÀB","link":"https://w.sim/a","snippet":"X"}]}`,
		"see https://w.sim/a, and http://w.sim/b.",
		"no results",
	}
	lc := newLinkCache(1 << 20)
	for _, text := range texts {
		for range 2 {
			got := links(lc, text)
			want := parseLinks(text)
			if len(got) != len(want) {
				t.Fatalf("%q: %d links, want %d", text, len(got), len(want))
			}
			for i, l := range got {
				if !reflect.DeepEqual(l.link, want[i]) || l.lowTitle != strings.ToLower(want[i].title) || l.lowText != strings.ToLower(want[i].text) {
					t.Fatalf("%q: link %d = %+v, want %+v", text, i, l, want[i])
				}
			}
		}
	}
	if got, want := links(nil, texts[0]), links(lc, texts[0]); !reflect.DeepEqual(got, want) {
		t.Fatalf("nil cache: %+v, want %+v", got, want)
	}
}
