package farm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mgrpo/mgrpo/rollout"
)

// ReadSchedule returns the schedule of the run written in dir whose step
// summaries are sums (summary.jsonl's, in step order): each step's
// rollouts as its rollouts.jsonl lists them, in plan order, with the
// seeds and versions they were sampled with, and what its summary says of
// its draws, restarts and training. A step whose rollouts.jsonl is
// missing or unreadable is an error naming the file.
func ReadSchedule(dir string, sums []rollout.StepSummary) ([]ScheduledStep, error) {
	out := make([]ScheduledStep, 0, len(sums))
	for i, sum := range sums {
		if sum.Step != i+1 {
			return nil, fmt.Errorf("schedule of %s: summary line %d is step %d, want %d", dir, i+1, sum.Step, i+1)
		}
		path := filepath.Join(rollout.StepDir(dir, sum.Step), rollout.RolloutsFile)
		units, err := readRolloutTasks(path)
		if err != nil {
			return nil, fmt.Errorf("schedule of %s: %w", dir, err)
		}
		out = append(out, ScheduledStep{Units: units, PolicyVersion: sum.PolicyVersion, ExecutorPolicyVersion: sum.ExecutorPolicyVersion,
			Streamed: len(sum.Draws) > 0, Draws: sum.Draws, Discarded: sum.DiscardedGroups, Capped: sum.ExtraDrawsCapped,
			Restarted: sum.RestartedRollouts, Training: sum.Training, TrainSeconds: sum.TrainSeconds, SyncSeconds: sum.SyncSeconds})
	}
	return out, nil
}

// readRolloutTasks returns the tasks of a rollouts.jsonl file's lines, in
// order.
func readRolloutTasks(path string) ([]rollout.RolloutTask, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is missing", path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []rollout.RolloutTask
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var rec struct {
			Task *rollout.RolloutTask `json:"task"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, line, err)
		}
		if rec.Task == nil {
			return nil, fmt.Errorf("%s line %d: no task", path, line)
		}
		out = append(out, *rec.Task)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}
