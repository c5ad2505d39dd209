package redis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// CreateRun stores r (see store.Runs). The configuration is compared and
// kept as compact JSON, so whitespace does not make two configurations
// differ.
func (s *Store) CreateRun(ctx context.Context, r store.RunRecord) error {
	cfg, err := compactJSON(r.Config)
	if err != nil {
		return fmt.Errorf("create run %s: configuration: %w", r.ID, err)
	}
	k := s.keys(r.ID)
	// The set of runs is listed first: a run listed without a record is
	// skipped by RunIDs, a record never goes unlisted.
	if err := s.client.SAdd(ctx, s.runsKey(), r.ID).Err(); err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, keyErr(s.runsKey(), err))
	}
	err = createRunScript.Run(ctx, s.client, []string{k.run},
		r.ID, strconv.Itoa(r.Version), cfg, r.Created.UTC().Format(time.RFC3339Nano)).Err()
	if err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, mapErr(err))
	}
	return nil
}

// compactJSON returns raw without insignificant whitespace ("" for none).
func compactJSON(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Run returns the run called id.
func (s *Store) Run(ctx context.Context, id string) (store.RunRecord, error) {
	k := s.keys(id)
	h, err := s.client.HGetAll(ctx, k.run).Result()
	if err != nil {
		return store.RunRecord{}, fmt.Errorf("run %s: %w", id, keyErr(k.run, err))
	}
	if len(h) == 0 {
		return store.RunRecord{}, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	r := store.RunRecord{ID: h["id"]}
	if r.Version, err = strconv.Atoi(h["version"]); err != nil {
		return store.RunRecord{}, fmt.Errorf("run %s: %w", id, corrupt(k.run, fmt.Errorf("version %q", h["version"])))
	}
	if r.Created, err = time.Parse(time.RFC3339Nano, h["created"]); err != nil {
		return store.RunRecord{}, fmt.Errorf("run %s: %w", id, corrupt(k.run, fmt.Errorf("created %q", h["created"])))
	}
	if c := h["config"]; c != "" {
		if !json.Valid([]byte(c)) {
			return store.RunRecord{}, fmt.Errorf("run %s: %w", id, corrupt(k.run, errors.New("config is not JSON")))
		}
		r.Config = json.RawMessage(c)
	}
	return r, nil
}

// PutStep stores st as a step record of run, which must exist.
func (s *Store) PutStep(ctx context.Context, run string, st store.StepRecord) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("put step %d of run %s: %w", st.Step, run, err)
	}
	k := s.keys(run)
	if err := putStepScript.Run(ctx, s.client, []string{k.run, k.steps}, run, strconv.Itoa(st.Step), b).Err(); err != nil {
		return fmt.Errorf("put step %d of run %s: %w", st.Step, run, mapErr(err))
	}
	return nil
}

// Steps returns run's step records in step order.
func (s *Store) Steps(ctx context.Context, run string) ([]store.StepRecord, error) {
	k := s.keys(run)
	h, err := s.client.HGetAll(ctx, k.steps).Result()
	if err != nil {
		return nil, fmt.Errorf("steps of run %s: %w", run, keyErr(k.steps, err))
	}
	out := make([]store.StepRecord, 0, len(h))
	for f, v := range h {
		var st store.StepRecord
		if err := json.Unmarshal([]byte(v), &st); err != nil {
			return nil, fmt.Errorf("steps of run %s: %w", run, corrupt(k.steps, fmt.Errorf("step %s: %v", f, err)))
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b store.StepRecord) int { return a.Step - b.Step })
	return out, nil
}

// PutStats stores the statistics of step, replacing any stored before.
func (s *Store) PutStats(ctx context.Context, run string, step int, stats []rollout.QueryStats) error {
	if stats == nil {
		stats = []rollout.QueryStats{}
	}
	b, err := json.Marshal(stats)
	if err != nil {
		return fmt.Errorf("put stats of step %d of run %s: %w", step, run, err)
	}
	key := s.keys(run).stats
	if err := s.client.HSet(ctx, key, strconv.Itoa(step), b).Err(); err != nil {
		return fmt.Errorf("put stats of step %d of run %s: %w", step, run, keyErr(key, err))
	}
	return nil
}

// StepStats returns the statistics of step in the order they were put.
func (s *Store) StepStats(ctx context.Context, run string, step int) ([]rollout.QueryStats, error) {
	k := s.keys(run)
	b, err := s.client.HGet(ctx, k.stats, strconv.Itoa(step)).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("stats of step %d of run %s: %w", step, run, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("stats of step %d of run %s: %w", step, run, keyErr(k.stats, err))
	}
	var stats []rollout.QueryStats
	if err := json.Unmarshal(b, &stats); err != nil {
		return nil, fmt.Errorf("stats of step %d of run %s: %w", step, run, corrupt(k.stats, err))
	}
	return stats, nil
}

// SetPolicyVersion records v as role's version unless a later one is
// stored. Versions below 1 are never stored (PolicyVersion's 0 is "none").
func (s *Store) SetPolicyVersion(ctx context.Context, run, role string, v int64) error {
	if v < 1 {
		return nil
	}
	err := setVersionScript.Run(ctx, s.client, []string{s.keys(run).versions}, role, strconv.FormatInt(v, 10)).Err()
	if err != nil {
		return fmt.Errorf("set %s policy version of run %s: %w", role, run, mapErr(err))
	}
	return nil
}

// PolicyVersion returns role's current version, 0 when none was set.
func (s *Store) PolicyVersion(ctx context.Context, run, role string) (int64, error) {
	k := s.keys(run)
	str, err := s.client.HGet(ctx, k.versions, role).Result()
	if errors.Is(err, goredis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("%s policy version of run %s: %w", role, run, keyErr(k.versions, err))
	}
	v, err := strconv.ParseInt(str, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s policy version of run %s: %w", role, run, corrupt(k.versions, fmt.Errorf("field %s: %q", role, str)))
	}
	return v, nil
}

// runsKey is the set of the store's run ids.
func (s *Store) runsKey() string { return s.prefix + "runs" }

// RunIDs returns the ids of the runs whose records exist, sorted.
func (s *Store) RunIDs(ctx context.Context) ([]string, error) {
	ids, err := s.client.SMembers(ctx, s.runsKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("list the runs: %w", keyErr(s.runsKey(), err))
	}
	slices.Sort(ids)
	out := []string{}
	for _, id := range ids {
		n, err := s.client.Exists(ctx, s.keys(id).run).Result()
		if err != nil {
			return nil, fmt.Errorf("list the runs: %w", keyErr(s.keys(id).run, err))
		}
		if n == 1 {
			out = append(out, id)
		}
	}
	return out, nil
}

// stepFilesKey is the hash of a step's files.
func (k runKeys) stepFiles(step int) string { return k.base + "files:" + strconv.Itoa(step) }

// PutStepFile stores data as the file name of step (HSET).
func (s *Store) PutStepFile(ctx context.Context, run string, step int, name string, data []byte) error {
	key := s.keys(run).stepFiles(step)
	if err := s.client.HSet(ctx, key, name, data).Err(); err != nil {
		return fmt.Errorf("put file %s of step %d of run %s: %w", name, step, run, keyErr(key, err))
	}
	return nil
}

// StepFile returns the file name of step (HGET).
func (s *Store) StepFile(ctx context.Context, run string, step int, name string) ([]byte, error) {
	key := s.keys(run).stepFiles(step)
	v, err := s.client.HGet(ctx, key, name).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("read file %s of step %d of run %s: %w", name, step, run, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read file %s of step %d of run %s: %w", name, step, run, keyErr(key, err))
	}
	return v, nil
}
