package farm

import "testing"

func TestCompareTasks(t *testing.T) {
	a := Task{ID: "a", Question: "q1", Answer: "1"}
	b := Task{ID: "b", Question: "q2", Answer: "2"}
	b2 := Task{ID: "b", Question: "q2", Answer: "two"}
	c := Task{ID: "c", Question: "q3", Answer: "3"}
	tests := []struct {
		name     string
		old, now []Task
		want     TaskChanges
	}{
		{"same", []Task{a, b}, []Task{a, b}, TaskChanges{Recorded: 2, Now: 2}},
		{"reordered", []Task{a, b}, []Task{b, a}, TaskChanges{Recorded: 2, Now: 2, Reordered: true}},
		{"added, removed, changed", []Task{a, b}, []Task{b2, c}, TaskChanges{Recorded: 2, Now: 2, Added: 1, Removed: 1, Changed: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CompareTasks(tt.old, tt.now)
			if got != tt.want {
				t.Errorf("CompareTasks = %+v, want %+v", got, tt.want)
			}
			if got.Same() != (tt.name == "same") {
				t.Errorf("Same() = %v for %s", got.Same(), tt.name)
			}
		})
	}
}
