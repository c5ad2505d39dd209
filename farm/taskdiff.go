package farm

import (
	"encoding/json"
	"fmt"
	"slices"
)

// TaskChanges is how a run's tasks differ from those it was started with:
// a resumed run must have the same tasks in the same order, since each
// step takes the next batch of them.
type TaskChanges struct {
	Recorded, Now           int
	Added, Removed, Changed int
	// Reordered: the same tasks in another order.
	Reordered bool
}

// Same reports whether nothing differs.
func (c TaskChanges) Same() bool {
	return c.Added+c.Removed+c.Changed == 0 && !c.Reordered && c.Recorded == c.Now
}

// String says what differs: "the run's 200 tasks, now 1 (1 added, 200
// removed, 0 changed)".
func (c TaskChanges) String() string {
	if c.Reordered {
		return fmt.Sprintf("the run's %d tasks, now the same tasks in another order", c.Recorded)
	}
	return fmt.Sprintf("the run's %d tasks, now %d (%d added, %d removed, %d changed)", c.Recorded, c.Now, c.Added, c.Removed, c.Changed)
}

// CompareTasks compares the tasks a run was started with and the tasks
// given now, by id and content.
func CompareTasks(recorded, now []Task) TaskChanges {
	c := TaskChanges{Recorded: len(recorded), Now: len(now)}
	old := make(map[string]string, len(recorded))
	for _, t := range recorded {
		old[t.ID] = taskJSON(t)
	}
	for _, t := range now {
		prev, ok := old[t.ID]
		switch {
		case !ok:
			c.Added++
		case prev != taskJSON(t):
			c.Changed++
		}
		delete(old, t.ID)
	}
	c.Removed = len(old)
	if c.Added+c.Removed+c.Changed == 0 {
		id := func(t Task) string { return t.ID }
		c.Reordered = !slices.Equal(mapTasks(recorded, id), mapTasks(now, id))
	}
	return c
}

func taskJSON(t Task) string {
	b, _ := json.Marshal(t)
	return string(b)
}

func mapTasks(ts []Task, f func(Task) string) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = f(t)
	}
	return out
}
