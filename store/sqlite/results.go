package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// scanPage is how many results ScanResults reads at a time. No connection
// or transaction is held while fn runs, so fn may use the store.
const scanPage = 256

// resultTable is a table of results and the column of its key: the
// steps' results, or the draws'.
type resultTable struct {
	name, key string
}

var (
	stepResults = resultTable{name: "results", key: "step"}
	drawResults = resultTable{name: "draw_results", key: "draw"}
)

// PutResult stores the result of task taskID of step unless one is stored
// already (the first result is kept).
func (s *Store) PutResult(ctx context.Context, run string, step int, taskID string, result json.RawMessage) error {
	return s.putResult(ctx, stepResults, run, step, taskID, result)
}

// Result returns the result of task taskID of step.
func (s *Store) Result(ctx context.Context, run string, step int, taskID string) (json.RawMessage, error) {
	return s.result(ctx, stepResults, run, step, taskID)
}

// ScanResults calls fn with every result of step, stopping at fn's first
// error: those of a store written before result files (in its table) in
// task id order, a page at a time, then the step's result file's in the
// order they were written. Results put or deleted while it
// runs may or may not be seen.
func (s *Store) ScanResults(ctx context.Context, run string, step int, fn func(taskID string, result json.RawMessage) error) error {
	return s.scanResults(ctx, stepResults, run, step, fn)
}

// DeleteResults removes step's results.
func (s *Store) DeleteResults(ctx context.Context, run string, step int) error {
	return s.deleteResults(ctx, stepResults, run, step)
}

func (s *Store) putResult(ctx context.Context, t resultTable, run string, key int, taskID string, result json.RawMessage) error {
	op := fmt.Sprintf("put the result of task %s", taskID)
	if err := s.alive(); err != nil {
		return s.errf(op, err)
	}
	if len(result) == 0 {
		return s.errf(op, errors.New("empty result"))
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.errf(op, err)
	}
	defer tx.Rollback()
	if err := s.appendResults(ctx, tx, t, run, key, []fileWrite{{taskID, result}}); err != nil {
		return s.errf(op, err)
	}
	if err := tx.Commit(); err != nil {
		return s.errf(op, err)
	}
	return nil
}

func (s *Store) result(ctx context.Context, t resultTable, run string, key int, taskID string) (json.RawMessage, error) {
	op := fmt.Sprintf("read the result of task %s", taskID)
	if err := s.alive(); err != nil {
		return nil, s.errf(op, err)
	}
	fromFile, ok, legacy, err := s.fileResult(ctx, t, run, key, taskID)
	if err != nil {
		return nil, s.errf(op, err)
	}
	if ok && !legacy {
		return json.RawMessage(fromFile), nil
	}
	// A store written before result files holds results in the table,
	// which were stored first.
	var res []byte
	err = s.r.QueryRowContext(ctx, `SELECT result FROM `+t.name+` WHERE run = ? AND `+t.key+` = ? AND task_id = ?`, run, key, taskID).Scan(&res)
	if errors.Is(err, sql.ErrNoRows) && ok {
		return json.RawMessage(fromFile), nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, s.errf(op, errNotFoundf("no result of %s %d of run %q", t.key, key, run))
	}
	if err != nil {
		return nil, s.errf(op, err)
	}
	return json.RawMessage(res), nil
}

func (s *Store) scanResults(ctx context.Context, t resultTable, run string, key int, fn func(taskID string, result json.RawMessage) error) error {
	op := fmt.Sprintf("scan the results of %s %d of run %q", t.key, key, run)
	type result struct {
		id  string
		res []byte
	}
	// A store written before result files holds results in the table;
	// those come first, then the file's not among them.
	seen := map[string]bool{}
	page := make([]result, 0, scanPage)
	after := ""
	for first := true; first || len(page) == scanPage; first = false {
		if err := s.alive(); err != nil {
			return s.errf(op, err)
		}
		// The first page starts at "" inclusive: a task id may be empty.
		cmp := ">"
		if first {
			cmp = ">="
		}
		rows, err := s.r.QueryContext(ctx, `SELECT task_id, result FROM `+t.name+` WHERE run = ? AND `+t.key+` = ? AND task_id `+cmp+` ? ORDER BY task_id LIMIT ?`,
			run, key, after, scanPage)
		if err != nil {
			return s.errf(op, err)
		}
		page = page[:0]
		for rows.Next() {
			var r result
			if err := rows.Scan(&r.id, &r.res); err != nil {
				rows.Close()
				return s.errf(op, err)
			}
			page = append(page, r)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return s.errf(op, err)
		}
		for _, r := range page {
			seen[r.id] = true
			if err := fn(r.id, json.RawMessage(r.res)); err != nil {
				return err
			}
		}
		if len(page) > 0 {
			after = page[len(page)-1].id
		}
	}
	var fnErr error
	err := s.scanFile(ctx, t, run, key, seen, func(id string, value []byte) error {
		fnErr = fn(id, json.RawMessage(value))
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return s.errf(op, err)
	}
	return nil
}

// CountResults returns how many results step holds.
func (s *Store) CountResults(ctx context.Context, run string, step int) (int, error) {
	op := fmt.Sprintf("count the results of step %d of run %q", step, run)
	if err := s.alive(); err != nil {
		return 0, s.errf(op, err)
	}
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM results WHERE run = ? AND step = ?`, run, step).Scan(&n); err != nil {
		return 0, s.errf(op, err)
	}
	ids, err := s.fileTasks(ctx, stepResults, run, step)
	if err != nil {
		return 0, s.errf(op, err)
	}
	if n == 0 {
		return len(ids), nil
	}
	// A store written before result files: its table's results first.
	for _, id := range ids {
		var one int
		err := s.r.QueryRowContext(ctx, `SELECT 1 FROM results WHERE run = ? AND step = ? AND task_id = ?`, run, step, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			n++
		} else if err != nil {
			return 0, s.errf(op, err)
		}
	}
	return n, nil
}

func (s *Store) deleteResults(ctx context.Context, t resultTable, run string, key int) error {
	op := fmt.Sprintf("delete the results of %s %d of run %q", t.key, key, run)
	if err := s.alive(); err != nil {
		return s.errf(op, err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.errf(op, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+t.name+` WHERE run = ? AND `+t.key+` = ?`, run, key); err != nil {
		return s.errf(op, err)
	}
	remove, err := s.deleteFile(ctx, tx, t, run, key)
	if err != nil {
		return s.errf(op, err)
	}
	if err := tx.Commit(); err != nil {
		return s.errf(op, err)
	}
	remove()
	return nil
}
