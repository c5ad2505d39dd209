package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLinks(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"serper", `{"organic":[{"title":"A","link":"https://w.sim/a","snippet":"x","position":1},{"title":"B","link":"https://w.sim/b"}]}`,
			[]string{"https://w.sim/a", "https://w.sim/b"}},
		{"searxng", `{"results":[{"url":"https://w.sim/c","title":"C","content":"y"}]}`, []string{"https://w.sim/c"}},
		{"markdown list", "1. [A](https://w.sim/a)\nsnippet a\n2. [B (b)](https://w.sim/b?x=1)\nsnippet b",
			[]string{"https://w.sim/a", "https://w.sim/b?x=1"}},
		{"bare urls", "see https://w.sim/a, and http://w.sim/b.", []string{"https://w.sim/a", "http://w.sim/b"}},
		{"nothing", "no results", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, l := range parseLinks(tt.text) {
				got = append(got, l.url)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseLinks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNearName(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"Velmora Labs", "Velmora Lab", true},
		{"Velmora Labs", "Valmora Labs", true},
		{"Velmora Labs", "Velmora Labs Group", true},
		{"Orvane", "New Orvane", true},
		{"Ida Kestrel", "Ida Kestrele", true},
		{"Velmora Labs", "Orvane", false},
		{"Silver Tide", "Golden Harbor", false},
	}
	for _, tt := range tests {
		if got := nearName(tt.a, tt.b); got != tt.want {
			t.Errorf("nearName(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
