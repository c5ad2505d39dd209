package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// The task states of the tasks table's state column.
const (
	statePending = "pending"
	stateLeased  = "leased"
	stateDone    = "done"
	stateDead    = "dead"
)

// Enqueue adds tasks to run's queue in one transaction, leaving tasks
// already there (by task id) as they are, and wakes this Store's waiting
// claimers.
func (s *Store) Enqueue(ctx context.Context, run string, tasks []rollout.RolloutTask) error {
	op := fmt.Sprintf("enqueue %d tasks in run %q", len(tasks), run)
	if err := s.alive(); err != nil {
		return s.errf(op, err)
	}
	if len(tasks) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.errf(op, err)
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(ctx, `INSERT INTO tasks (run, task_id, task_run, step, query_id, k, seed, policy_version, executor_policy_version, state, attempts, worker, expires_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '`+statePending+`', 0, '', 0) ON CONFLICT (run, task_id) DO NOTHING`)
	if err != nil {
		return s.errf(op, err)
	}
	defer ins.Close()
	added := int64(0)
	for _, t := range tasks {
		res, err := ins.ExecContext(ctx, run, t.ID(), t.Run, t.Step, t.QueryID, t.K, t.Seed, t.PolicyVersion, t.ExecutorPolicyVersion)
		if err != nil {
			return s.errf(op, fmt.Errorf("task %s: %w", t.ID(), err))
		}
		n, err := res.RowsAffected()
		if err != nil {
			return s.errf(op, err)
		}
		added += n
	}
	if err := tx.Commit(); err != nil {
		return s.errf(op, err)
	}
	if added > 0 {
		s.notify()
	}
	return nil
}

// Claim leases up to r.Max tasks in one IMMEDIATE transaction, so that no
// two claimers, in this process or another, get the same task. With none
// available it looks again when this Store enqueues tasks and every poll
// interval (tasks enqueued by another process, leases that expire), until
// r.Wait has passed, ctx is done or the Store is closed.
func (s *Store) Claim(ctx context.Context, r store.ClaimRequest) ([]store.Lease, error) {
	op := fmt.Sprintf("claim tasks of run %q for %s", r.Run, r.Worker)
	if err := s.alive(); err != nil {
		return nil, s.errf(op, err)
	}
	switch {
	case r.Max < 1:
		return nil, s.errf(op, fmt.Errorf("max %d < 1", r.Max))
	case r.Lease <= 0:
		return nil, s.errf(op, fmt.Errorf("lease %v ≤ 0", r.Lease))
	case r.MaxAttempts < 0:
		return nil, s.errf(op, fmt.Errorf("max attempts %d < 0", r.MaxAttempts))
	}
	deadline := time.Now().Add(r.Wait)
	var timer *time.Timer
	for {
		// Taken before looking, so that an Enqueue between the look and
		// the wait still wakes this claimer.
		wake := s.woken()
		leases, err := s.claimOnce(ctx, r)
		if err != nil {
			return nil, s.errf(op, err)
		}
		left := time.Until(deadline)
		if len(leases) > 0 || left <= 0 {
			return leases, nil
		}
		d := min(s.cfg.pollInterval, left)
		if timer == nil {
			timer = time.NewTimer(d)
			defer timer.Stop()
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return nil, s.errf(op, ctx.Err())
		case <-s.life.Done():
			return nil, s.errf(op, errClosed)
		case <-wake:
		case <-timer.C:
		}
	}
}

// claimOnce dead-letters the run's exhausted expired leases, then leases
// pending tasks in enqueue order and, if that leaves room, expired ones.
func (s *Store) claimOnce(ctx context.Context, r store.ClaimRequest) ([]store.Lease, error) {
	now := time.Now()
	nowMs := now.UnixMilli()
	expMs := max(now.Add(r.Lease).UnixMilli(), nowMs+1)
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if r.MaxAttempts > 0 {
		const exhausted = `run = ? AND state = '` + stateLeased + `' AND expires_ms <= ? AND attempts >= ?`
		res, err := tx.ExecContext(ctx, `INSERT INTO dead_letters (run, task_seq, attempts, last_worker)
			SELECT run, seq, attempts, worker FROM tasks WHERE `+exhausted+` ORDER BY expires_ms, seq`,
			r.Run, nowMs, r.MaxAttempts)
		if err != nil {
			return nil, fmt.Errorf("dead-letter: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, err
		} else if n > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = '`+stateDead+`' WHERE `+exhausted, r.Run, nowMs, r.MaxAttempts); err != nil {
				return nil, fmt.Errorf("dead-letter: %w", err)
			}
		}
	}
	leases, err := claimWhere(ctx, tx, r, expMs, `state = '`+statePending+`' ORDER BY seq`, nil)
	if err != nil {
		return nil, err
	}
	if len(leases) < r.Max {
		rest := r
		rest.Max -= len(leases)
		expired, err := claimWhere(ctx, tx, rest, expMs, `state = '`+stateLeased+`' AND expires_ms <= ? ORDER BY expires_ms, seq`, []any{nowMs})
		if err != nil {
			return nil, err
		}
		leases = append(leases, expired...)
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return leases, nil
}

// claimWhere leases up to r.Max of the run's tasks that cond (a condition
// with an ORDER BY, taking args) selects, returned in task order.
func claimWhere(ctx context.Context, tx *sql.Tx, r store.ClaimRequest, expMs int64, cond string, args []any) ([]store.Lease, error) {
	q := `UPDATE tasks SET state = '` + stateLeased + `', attempts = attempts + 1, worker = ?, expires_ms = ?
		WHERE seq IN (SELECT seq FROM tasks WHERE run = ? AND ` + cond + ` LIMIT ?)
		RETURNING seq, task_run, step, query_id, k, seed, policy_version, executor_policy_version, attempts`
	all := append([]any{r.Worker, expMs, r.Run}, args...)
	rows, err := tx.QueryContext(ctx, q, append(all, r.Max)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type claimed struct {
		seq   int64
		lease store.Lease
	}
	var got []claimed
	for rows.Next() {
		c := claimed{lease: store.Lease{Worker: r.Worker, Expires: time.UnixMilli(expMs)}}
		t := &c.lease.Task
		if err := rows.Scan(&c.seq, &t.Run, &t.Step, &t.QueryID, &t.K, &t.Seed, &t.PolicyVersion, &t.ExecutorPolicyVersion, &c.lease.Attempt); err != nil {
			return nil, err
		}
		c.lease.Handle = handle(c.seq, c.lease.Attempt)
		got = append(got, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// RETURNING gives rows in no promised order.
	slices.SortFunc(got, func(a, b claimed) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]store.Lease, len(got))
	for i, c := range got {
		out[i] = c.lease
	}
	return out, nil
}

// handle is a lease's Handle: the task's row and the attempt the lease
// is, which no other claim of the task shares.
func handle(seq int64, attempt int) string {
	return strconv.FormatInt(seq, 10) + ":" + strconv.Itoa(attempt)
}

func parseHandle(h string) (seq int64, attempt int, err error) {
	a, b, ok := strings.Cut(h, ":")
	if ok {
		if seq, err = strconv.ParseInt(a, 10, 64); err == nil {
			attempt, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("lease handle %q is not this backend's", h)
	}
	return seq, attempt, nil
}

// Extend moves l's expiry to now + d while l is still the task's current
// lease, even if it expired, as long as no one claimed the task since.
func (s *Store) Extend(ctx context.Context, l store.Lease, d time.Duration) (store.Lease, error) {
	op := fmt.Sprintf("extend the lease of task %s", l.Task.ID())
	if err := s.alive(); err != nil {
		return l, s.errf(op, err)
	}
	if d <= 0 {
		return l, s.errf(op, fmt.Errorf("duration %v ≤ 0", d))
	}
	seq, attempt, err := parseHandle(l.Handle)
	if err != nil {
		return l, s.errf(op, fmt.Errorf("%w: %w", err, store.ErrLeaseLost))
	}
	now := time.Now()
	expMs := max(now.Add(d).UnixMilli(), now.UnixMilli()+1)
	res, err := s.w.ExecContext(ctx, `UPDATE tasks SET expires_ms = ? WHERE seq = ? AND task_id = ? AND state = '`+stateLeased+`' AND attempts = ?`,
		expMs, seq, l.Task.ID(), attempt)
	if err != nil {
		return l, s.errf(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return l, s.errf(op, err)
	}
	if n == 0 {
		return l, s.errf(op, fmt.Errorf("attempt %d is no longer the task's lease: %w", attempt, store.ErrLeaseLost))
	}
	l.Expires = time.UnixMilli(expMs)
	return l, nil
}

// Complete marks the task of l done, whichever lease of the task l is. A
// dead-lettered task that is completed leaves the dead letters: its result
// is as good as any.
func (s *Store) Complete(ctx context.Context, l store.Lease) error {
	op := fmt.Sprintf("complete task %s", l.Task.ID())
	if err := s.alive(); err != nil {
		return s.errf(op, err)
	}
	seq, _, err := parseHandle(l.Handle)
	if err != nil {
		return s.errf(op, fmt.Errorf("%w: %w", err, store.ErrNotFound))
	}
	res, err := s.w.ExecContext(ctx, `UPDATE tasks SET state = '`+stateDone+`', expires_ms = 0 WHERE seq = ? AND task_id = ? AND state <> '`+stateDone+`'`,
		seq, l.Task.ID())
	if err != nil {
		return s.errf(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.errf(op, err)
	}
	if n == 1 {
		return nil
	}
	var one int
	err = s.r.QueryRowContext(ctx, `SELECT 1 FROM tasks WHERE seq = ? AND task_id = ?`, seq, l.Task.ID()).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return s.errf(op, errNotFoundf("no such task"))
	}
	if err != nil {
		return s.errf(op, err)
	}
	return nil // done already
}

// Counts returns the sizes of run's queue; leases that expired count as
// pending.
func (s *Store) Counts(ctx context.Context, run string) (store.QueueCounts, error) {
	op := fmt.Sprintf("count the queue of run %q", run)
	var c store.QueueCounts
	if err := s.alive(); err != nil {
		return c, s.errf(op, err)
	}
	now := nowMillis()
	err := s.r.QueryRowContext(ctx, `SELECT
			count(*) FILTER (WHERE state = '`+statePending+`' OR (state = '`+stateLeased+`' AND expires_ms <= ?)),
			count(*) FILTER (WHERE state = '`+stateLeased+`' AND expires_ms > ?),
			count(*) FILTER (WHERE state = '`+stateDone+`'),
			count(*) FILTER (WHERE state = '`+stateDead+`')
		FROM tasks WHERE run = ?`, now, now, run).Scan(&c.Pending, &c.Leased, &c.Done, &c.Dead)
	if err != nil {
		return c, s.errf(op, err)
	}
	return c, nil
}

// DeadLetters returns run's dead-lettered tasks in the order they died.
func (s *Store) DeadLetters(ctx context.Context, run string) ([]store.DeadTask, error) {
	op := fmt.Sprintf("read the dead letters of run %q", run)
	if err := s.alive(); err != nil {
		return nil, s.errf(op, err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT t.task_run, t.step, t.query_id, t.k, t.seed, t.policy_version, t.executor_policy_version, d.attempts, d.last_worker
		FROM dead_letters d JOIN tasks t ON t.seq = d.task_seq
		WHERE d.run = ? AND t.state = '`+stateDead+`' ORDER BY d.seq`, run)
	if err != nil {
		return nil, s.errf(op, err)
	}
	defer rows.Close()
	out := []store.DeadTask{}
	for rows.Next() {
		var d store.DeadTask
		t := &d.Task
		if err := rows.Scan(&t.Run, &t.Step, &t.QueryID, &t.K, &t.Seed, &t.PolicyVersion, &t.ExecutorPolicyVersion, &d.Attempts, &d.LastWorker); err != nil {
			return nil, s.errf(op, err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errf(op, err)
	}
	return out, nil
}
