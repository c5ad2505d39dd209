package failure

import (
	"os"
	"strings"
	"testing"
)

// TestCauseTable checks every row of the class table: a cause named once,
// a valid kind that KindOf returns, and the same row in
// docs/architecture.md.
func TestCauseTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[Cause]bool{}
	for _, r := range Causes {
		if seen[r.Cause] {
			t.Errorf("cause %q listed twice", r.Cause)
		}
		seen[r.Cause] = true
		if r.Kind != KindInfra && r.Kind != KindModel {
			t.Errorf("cause %q has kind %q", r.Cause, r.Kind)
		}
		if got := KindOf(r.Cause); got != r.Kind {
			t.Errorf("KindOf(%q) = %q, want %q", r.Cause, got, r.Kind)
		}
		row := "| `" + r.Cause + "` | " + string(r.Kind) + " | " + r.What + " |"
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/architecture.md lacks the row %s", row)
		}
	}
	if KindOf("no such cause") != KindModel {
		t.Error("an unknown cause is not a model failure")
	}
	for c, want := range map[Class]bool{ClassServer: true, ClassRateLimited: true, ClassTimeout: true, ClassRefused: false,
		ClassNetwork: true, ClassInvalidArgs: false, ClassClient: false, ClassOK: false} {
		if IsToolOutage(c) != want {
			t.Errorf("IsToolOutage(%q) = %v, want %v", c, !want, want)
		}
	}
}
