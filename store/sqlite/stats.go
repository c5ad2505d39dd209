package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/mgrpo/mgrpo/rollout"
)

// PutStats stores the statistics of step, replacing any stored for it, in
// one transaction.
func (s *Store) PutStats(ctx context.Context, run string, step int, stats []rollout.QueryStats) error {
	op := fmt.Sprintf("put the statistics of step %d of run %q", step, run)
	if err := s.alive(); err != nil {
		return s.errf(op, err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.errf(op, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM query_stats WHERE run = ? AND step = ?`, run, step); err != nil {
		return s.errf(op, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO stat_sets (run, step, n) VALUES (?, ?, ?) ON CONFLICT (run, step) DO UPDATE SET n = excluded.n`,
		run, step, len(stats)); err != nil {
		return s.errf(op, err)
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO query_stats (run, step, idx, query_id, main_n, main, main_mean, main_std, d_n, d, dbar,
		sub_n, sub, sub_mean, sub_std) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return s.errf(op, err)
	}
	defer ins.Close()
	// One buffer holds the three arrays of a query; the driver copies
	// what it binds.
	var buf []byte
	for i, q := range stats {
		buf = buf[:0]
		buf = appendFloats(buf, q.MainRewards)
		mainEnd := len(buf)
		buf = appendInts(buf, q.D)
		dEnd := len(buf)
		buf = appendFloats(buf, q.SubRewards)
		if _, err := ins.ExecContext(ctx, run, step, i, q.QueryID,
			arrayLen(q.MainRewards == nil, len(q.MainRewards)), buf[:mainEnd:mainEnd], q.MainMean, q.MainStd,
			arrayLen(q.D == nil, len(q.D)), buf[mainEnd:dEnd:dEnd], q.DBar,
			arrayLen(q.SubRewards == nil, len(q.SubRewards)), buf[dEnd:], q.SubMean, q.SubStd); err != nil {
			return s.errf(op, fmt.Errorf("query %d (%q): %w", i, q.QueryID, err))
		}
	}
	if err := tx.Commit(); err != nil {
		return s.errf(op, err)
	}
	return nil
}

// StepStats returns the statistics of step in the order they were put.
func (s *Store) StepStats(ctx context.Context, run string, step int) ([]rollout.QueryStats, error) {
	op := fmt.Sprintf("read the statistics of step %d of run %q", step, run)
	if err := s.alive(); err != nil {
		return nil, s.errf(op, err)
	}
	// One read transaction: the count and the rows of one PutStats.
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.errf(op, err)
	}
	defer tx.Rollback()
	var n int
	err = tx.QueryRowContext(ctx, `SELECT n FROM stat_sets WHERE run = ? AND step = ?`, run, step).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, s.errf(op, errNotFoundf("no statistics"))
	}
	if err != nil {
		return nil, s.errf(op, err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT idx, query_id, main_n, main, main_mean, main_std, d_n, d, dbar, sub_n, sub, sub_mean, sub_std
		FROM query_stats WHERE run = ? AND step = ? ORDER BY idx`, run, step)
	if err != nil {
		return nil, s.errf(op, err)
	}
	defer rows.Close()
	out := make([]rollout.QueryStats, 0, n)
	for rows.Next() {
		var (
			q                                  rollout.QueryStats
			idx, mainN, dN, subN               int
			main, d, sub                       []byte
			mainMean, mainStd, subMean, subStd sql.NullFloat64
		)
		if err := rows.Scan(&idx, &q.QueryID, &mainN, &main, &mainMean, &mainStd, &dN, &d, &q.DBar, &subN, &sub, &subMean, &subStd); err != nil {
			return nil, s.errf(op, err)
		}
		if idx != len(out) {
			return nil, s.errf(op, corruptf("query %d stored as number %d", len(out), idx))
		}
		if q.MainRewards, err = readFloats(main, mainN); err == nil {
			if q.D, err = readInts(d, dN); err == nil {
				q.SubRewards, err = readFloats(sub, subN)
			}
		}
		if err != nil {
			return nil, s.errf(op, fmt.Errorf("query %d (%q): %w", idx, q.QueryID, err))
		}
		q.MainMean, q.MainStd = nanIfNull(mainMean), nanIfNull(mainStd)
		q.SubMean, q.SubStd = nanIfNull(subMean), nanIfNull(subStd)
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errf(op, err)
	}
	if len(out) != n {
		return nil, s.errf(op, corruptf("%d queries stored, %d recorded", len(out), n))
	}
	return out, nil
}

// The arrays of a QueryStats are stored as blobs of little-endian 8-byte
// values (IEEE 754 bits for floats, two's complement for ints), exact and
// NaN-safe, beside their length: -1 for a nil slice, which a zero-length
// blob could not tell from an empty one.

func arrayLen(isNil bool, n int) int {
	if isNil {
		return -1
	}
	return n
}

func appendFloats(b []byte, v []float64) []byte {
	for _, f := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	return b
}

func appendInts(b []byte, v []int) []byte {
	for _, n := range v {
		b = binary.LittleEndian.AppendUint64(b, uint64(int64(n)))
	}
	return b
}

func checkArray(b []byte, n int) error {
	if n < -1 || (n == -1 && len(b) != 0) || (n >= 0 && len(b) != 8*n) {
		return corruptf("array of %d values stored in %d bytes", n, len(b))
	}
	return nil
}

func readFloats(b []byte, n int) ([]float64, error) {
	if err := checkArray(b, n); err != nil || n == -1 {
		return nil, err
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out, nil
}

func readInts(b []byte, n int) ([]int, error) {
	if err := checkArray(b, n); err != nil || n == -1 {
		return nil, err
	}
	out := make([]int, n)
	for i := range out {
		out[i] = int(int64(binary.LittleEndian.Uint64(b[8*i:])))
	}
	return out, nil
}

// nanIfNull reads a REAL column: SQLite stores a NaN as NULL.
func nanIfNull(f sql.NullFloat64) float64 {
	if !f.Valid {
		return math.NaN()
	}
	return f.Float64
}
