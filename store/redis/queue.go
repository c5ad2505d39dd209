package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// enqueueBatch is the most tasks one Enqueue script adds, so that a large
// step does not hold the server for long.
const enqueueBatch = 256

// maxBlock is the longest a waiting Claim blocks in one XREAD: go-redis
// does not abandon a blocking read when its context is cancelled, so the
// wait is cut into slices that end soon enough to notice.
const maxBlock = 500 * time.Millisecond

// Enqueue adds tasks to run's queue, each once by task id.
func (s *Store) Enqueue(ctx context.Context, run string, tasks []rollout.RolloutTask) error {
	k := s.keys(run)
	for len(tasks) > 0 {
		n := min(len(tasks), enqueueBatch)
		args := make([]any, 0, 1+2*n)
		args = append(args, group)
		for _, t := range tasks[:n] {
			b, err := json.Marshal(t)
			if err != nil {
				return fmt.Errorf("enqueue task %s: %w", t.ID(), err)
			}
			args = append(args, t.ID(), b)
		}
		if err := enqueueScript.Run(ctx, s.client, []string{k.queue, k.tasks}, args...).Err(); err != nil {
			return fmt.Errorf("enqueue %d tasks in run %s: %w", n, run, mapErr(err))
		}
		tasks = tasks[n:]
	}
	return nil
}

// Claim leases up to r.Max tasks of r.Run (see store.Queue), waiting up to
// r.Wait for one.
func (s *Store) Claim(ctx context.Context, r store.ClaimRequest) ([]store.Lease, error) {
	switch {
	case r.Max < 1:
		return nil, fmt.Errorf("claim in run %s: Max %d, want at least 1", r.Run, r.Max)
	case r.Lease <= 0:
		return nil, fmt.Errorf("claim in run %s: Lease %v, want more than 0", r.Run, r.Lease)
	case r.Worker == "":
		return nil, fmt.Errorf("claim in run %s: no worker name", r.Run)
	}
	k := s.keys(r.Run)
	end := time.Now().Add(r.Wait)
	for {
		start := time.Now()
		res, err := claimScript.Run(ctx, s.client, []string{k.queue, k.leases, k.dead, k.tasks},
			group, r.Worker, r.Max, millis(r.Lease), max(r.MaxAttempts, 0)).Slice()
		if err != nil {
			if ctxErr := ctxEnded(ctx); ctxErr != nil {
				err = ctxErr
			}
			return nil, fmt.Errorf("claim in run %s: %w", r.Run, mapErr(err))
		}
		leases, lastID, next, err := s.claimReply(r, start, res)
		if err != nil || len(leases) > 0 {
			return leases, err
		}
		left := time.Until(end)
		if left <= 0 {
			return []store.Lease{}, nil
		}
		block := min(left, maxBlock)
		if next >= 0 {
			// Wake when the next lease expires (1 ms late, since the
			// deadline itself is still held).
			block = min(block, time.Duration(next+1)*time.Millisecond)
		}
		if err := s.waitForEntry(ctx, k.queue, lastID, block); err != nil {
			return nil, fmt.Errorf("claim in run %s: %w", r.Run, err)
		}
	}
}

// claimReply decodes the claim script's reply.
func (s *Store) claimReply(r store.ClaimRequest, start time.Time, res []any) (leases []store.Lease, lastID string, next int64, err error) {
	if len(res) != 3 {
		return nil, "", 0, fmt.Errorf("claim in run %s: unexpected reply %v", r.Run, res)
	}
	list, _ := res[0].([]any)
	lastID, _ = res[1].(string)
	next, _ = res[2].(int64)
	leases = make([]store.Lease, 0, len(list))
	for _, item := range list {
		e, ok := item.([]any)
		if !ok || len(e) != 3 {
			return nil, "", 0, fmt.Errorf("claim in run %s: unexpected reply %v", r.Run, item)
		}
		id, _ := e[0].(string)
		payload, _ := e[1].(string)
		attempt, _ := e[2].(int64)
		var t rollout.RolloutTask
		if err := json.Unmarshal([]byte(payload), &t); err != nil {
			return nil, "", 0, fmt.Errorf("claim in run %s: %w", r.Run,
				corrupt(s.keys(r.Run).queue, fmt.Errorf("entry %s: %v", id, err)))
		}
		leases = append(leases, store.Lease{
			Task: t, Worker: r.Worker, Attempt: int(attempt),
			Expires: start.Add(r.Lease), Handle: handle(id, r.Run),
		})
	}
	return leases, lastID, next, nil
}

// waitForEntry blocks until queue has an entry after lastID or d passes.
func (s *Store) waitForEntry(ctx context.Context, queue, lastID string, d time.Duration) error {
	if err := ctxEnded(ctx); err != nil {
		return err
	}
	err := s.client.XRead(ctx, &goredis.XReadArgs{
		Streams: []string{queue, lastID},
		Count:   1,
		// BLOCK 0 would wait for ever.
		Block: max(d, time.Millisecond),
	}).Err()
	if err != nil && !errors.Is(err, goredis.Nil) {
		if ctxErr := ctxEnded(ctx); ctxErr != nil {
			return ctxErr
		}
		return keyErr(queue, err)
	}
	return ctxEnded(ctx)
}

// ctxEnded is ctx.Err(), and DeadlineExceeded once ctx's deadline has
// passed even if its timer has not fired yet: the connection's read
// deadline is the context's, and may end a blocking read first.
func ctxEnded(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// handle is a lease's Handle: its stream entry id and its run.
func handle(entryID, run string) string { return entryID + "@" + run }

// parseHandle splits a Handle made by handle.
func parseHandle(h string) (entryID, run string, err error) {
	id, run, ok := strings.Cut(h, "@")
	if !ok || id == "" {
		return "", "", fmt.Errorf("lease handle %q is not a Redis store's: %w", h, store.ErrNotFound)
	}
	return id, run, nil
}

// Extend moves l's expiry to now + d.
func (s *Store) Extend(ctx context.Context, l store.Lease, d time.Duration) (store.Lease, error) {
	if d <= 0 {
		return store.Lease{}, fmt.Errorf("extend lease of task %s: duration %v, want more than 0", l.Task.ID(), d)
	}
	id, run, err := parseHandle(l.Handle)
	if err != nil {
		return store.Lease{}, fmt.Errorf("extend lease of task %s: %w", l.Task.ID(), err)
	}
	k := s.keys(run)
	start := time.Now()
	err = extendScript.Run(ctx, s.client, []string{k.queue, k.leases},
		group, id, l.Worker, l.Attempt, millis(d)).Err()
	if err != nil {
		return store.Lease{}, fmt.Errorf("extend lease of task %s: %w", l.Task.ID(), mapErr(err))
	}
	l.Expires = start.Add(d)
	return l, nil
}

// Complete marks the task of l done (idempotent by task id).
func (s *Store) Complete(ctx context.Context, l store.Lease) error {
	id, run, err := parseHandle(l.Handle)
	if err != nil {
		return fmt.Errorf("complete task %s: %w", l.Task.ID(), err)
	}
	k := s.keys(run)
	if err := completeScript.Run(ctx, s.client, []string{k.queue, k.leases, k.done, k.dead}, group, id, l.Task.ID()).Err(); err != nil {
		return fmt.Errorf("complete task %s: %w", l.Task.ID(), mapErr(err))
	}
	return nil
}

// Counts returns the sizes of run's queue.
func (s *Store) Counts(ctx context.Context, run string) (store.QueueCounts, error) {
	k := s.keys(run)
	n, err := countsScript.Run(ctx, s.client, []string{k.queue, k.leases, k.done, k.dead, k.tasks}, group).Int64Slice()
	if err != nil {
		return store.QueueCounts{}, fmt.Errorf("queue counts of run %s: %w", run, mapErr(err))
	}
	if len(n) != 5 {
		return store.QueueCounts{}, fmt.Errorf("queue counts of run %s: unexpected reply %v", run, n)
	}
	return store.QueueCounts{Pending: int(n[0] + n[2]), Leased: int(n[1]), Done: int(n[3]), Dead: int(n[4])}, nil
}

// DeadLetters returns run's dead-lettered tasks in the order they died.
func (s *Store) DeadLetters(ctx context.Context, run string) ([]store.DeadTask, error) {
	k := s.keys(run)
	entries, err := s.client.XRange(ctx, k.dead, "-", "+").Result()
	if err != nil {
		return nil, fmt.Errorf("dead letters of run %s: %w", run, keyErr(k.dead, err))
	}
	out := make([]store.DeadTask, 0, len(entries))
	for _, e := range entries {
		var d store.DeadTask
		task, _ := e.Values["task"].(string)
		attempts, _ := e.Values["attempts"].(string)
		d.LastWorker, _ = e.Values["worker"].(string)
		var err error
		if err = json.Unmarshal([]byte(task), &d.Task); err == nil {
			d.Attempts, err = strconv.Atoi(attempts)
		}
		if err != nil {
			return nil, fmt.Errorf("dead letters of run %s: %w", run, corrupt(k.dead, fmt.Errorf("entry %s: %v", e.ID, err)))
		}
		out = append(out, d)
	}
	return out, nil
}
