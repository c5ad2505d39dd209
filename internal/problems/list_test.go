package problems

import "testing"

func TestListNamesKeyAndFlag(t *testing.T) {
	var l List
	l.Add("group_size", "group-size", "%d: must be at least 1", 0)
	l.Add("grace", "", "%v: must not be negative", "-1s")
	want := []string{"group_size (--group-size): 0: must be at least 1", "grace: -1s: must not be negative"}
	if len(l) != len(want) {
		t.Fatalf("%d problems, want %d", len(l), len(want))
	}
	for i, err := range l {
		if err.Error() != want[i] {
			t.Errorf("problem %d = %q, want %q", i, err, want[i])
		}
	}
}
