package web

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChainRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		chain Chain
	}{
		{"one hop", Chain{Entity: "Velmora Labs", Relations: []string{"founder"}}},
		{"two hops", Chain{Entity: "Silver Tide", Relations: []string{"author", "employer"}}},
		{"three hops, spaced relations", Chain{Entity: "Ida Kestrel", Relations: []string{"employer", "headquarters city", "founding year"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := QuestionText(tt.chain)
			got, ok := ParseQuestion("Please answer. " + q + " Think hard.")
			if !ok {
				t.Fatalf("ParseQuestion(%q) found nothing", q)
			}
			if diff := cmp.Diff(tt.chain, got); diff != "" {
				t.Errorf("question %q (-want +got):\n%s", q, diff)
			}
			s := SubtaskText(tt.chain)
			got, ok = ParseSubtask(s)
			if !ok {
				t.Fatalf("ParseSubtask(%q) found nothing", s)
			}
			if diff := cmp.Diff(tt.chain, got); diff != "" {
				t.Errorf("subtask %q (-want +got):\n%s", s, diff)
			}
		})
	}
}

func TestParseFacts(t *testing.T) {
	text := "## Velmora Labs\n\nVelmora Labs is a firm. The founder of Velmora Labs is Ida Kestrel. " +
		"[Home](/) The founding year of Velmora Labs is 1987.\nThe population of Orvane is 2,345,000.\n" +
		"The mayor of [Orvane](http://127.0.0.1:8/site/a/orvane.html) is [Ida Kestrel](http://127.0.0.1:8/site/b/ida-kestrel.html)."
	want := []Fact{
		{Subject: "Velmora Labs", Relation: "founder", Object: "Ida Kestrel"},
		{Subject: "Velmora Labs", Relation: "founding year", Object: "1987"},
		{Subject: "Orvane", Relation: "population", Object: "2,345,000"},
		{Subject: "Orvane", Relation: "mayor", Object: "Ida Kestrel"},
	}
	if diff := cmp.Diff(want, ParseFacts(text)); diff != "" {
		t.Errorf("ParseFacts (-want +got):\n%s", diff)
	}
	for _, f := range want {
		if got := ParseFacts(FactSentence(f)); len(got) != 1 || got[0] != f {
			t.Errorf("ParseFacts(FactSentence(%v)) = %v", f, got)
		}
	}
}
