package didyoumean

import "testing"

func TestSuggest(t *testing.T) {
	names := []string{"batch-size", "group-size", "steps", "rollout", "planner_url", "tasks"}
	for _, tc := range []struct{ in, want string }{
		{"batchsize", "batch-size"},
		{"grup-size", "group-size"},
		{"rolout", "rollout"},
		{"tasx", "tasks"},
		{"plannerurl", "planner_url"},
		{"stpes", "steps"},
		{"zzzzzz", ""},
		{"sim", ""},
	} {
		if got := Suggest(tc.in, names); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if d := EditDistance("kitten", "sitting"); d != 3 {
		t.Errorf("EditDistance(kitten, sitting) = %d, want 3", d)
	}
}
