package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/mgrpo/mgrpo/store"
)

// Results of the step (or draw) in progress live in append-only files, one
// per run and step, beside the database (PATH.results/ID.log), and the
// database keeps only each file's committed length (table result_files).
// A result is written once and deleted with its step once the step's files
// are written: in the B-tree each cost a chain of overflow pages written
// to the WAL, checkpointed, and written again when freed. A batch of
// results is one pwrite here and one small UPDATE in the same transaction.
//
// A file's bytes past its committed length are not part of it: a writer
// writes its batch at the committed length inside its IMMEDIATE
// transaction (so writers of every process are serialized by SQLite's
// lock) and commits the new length after the write, so a crash between
// the two leaves bytes that readers ignore and the next batch overwrites.
// Each record carries a CRC-32C of its bytes; a record whose bytes fail it
// (a power failure lost file data the database's commit kept) ends what
// can be read of its file, and its rollouts are done again on resume, as
// with any result lost that way.

// recordHeader is a record's header: the task id's length, the value's
// length and the CRC-32C of both lengths, the id and the value, each 4
// bytes little-endian. The id and the value follow.
const recordHeader = 12

// maxRecordID bounds a task id's length in a record, so that a damaged
// header never makes a huge read.
const maxRecordID = 1 << 16

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends the record of one result.
func appendRecord(dst []byte, taskID string, value []byte) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(taskID)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(value)))
	dst = append(dst, 0, 0, 0, 0)
	dst = append(dst, taskID...)
	dst = append(dst, value...)
	sum := crc32.Update(0, castagnoli, dst[start:start+8])
	sum = crc32.Update(sum, castagnoli, dst[start+recordHeader:])
	binary.LittleEndian.PutUint32(dst[start+8:], sum)
	return dst
}

// resultsDir is the directory of the store's result files.
func (s *Store) resultsDir() string { return s.path + ".results" }

func (s *Store) resultFile(id int64) string {
	return filepath.Join(s.resultsDir(), strconv.FormatInt(id, 10)+".log")
}

// fileWrite is one result of a batch bound for a result file.
type fileWrite struct {
	taskID string
	value  []byte
}

// appendResults writes ws, the results of one run and step of t, to their
// file within tx, the store's write transaction, and records the file's
// new length in it.
func (s *Store) appendResults(ctx context.Context, tx *sql.Tx, t resultTable, run string, key int, ws []fileWrite) error {
	var id, size int64
	err := tx.QueryRowContext(ctx, `SELECT id, size FROM result_files WHERE run = ? AND kind = ? AND key = ?`, run, t.name, key).Scan(&id, &size)
	if errors.Is(err, sql.ErrNoRows) {
		err = tx.QueryRowContext(ctx, `INSERT INTO result_files (run, kind, key, size) VALUES (?, ?, ?, 0) RETURNING id`, run, t.name, key).Scan(&id)
	}
	if err != nil {
		return err
	}
	n := 0
	for _, w := range ws {
		n += recordHeader + len(w.taskID) + len(w.value)
	}
	buf := make([]byte, 0, n)
	for _, w := range ws {
		if len(w.taskID) > maxRecordID {
			return fmt.Errorf("task id of %d bytes (at most %d)", len(w.taskID), maxRecordID)
		}
		buf = appendRecord(buf, w.taskID, w.value)
	}
	if err := writeAt(s.resultsDir(), s.resultFile(id), buf, size); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE result_files SET size = ? WHERE id = ?`, size+int64(len(buf)), id)
	return err
}

// writeAt writes buf at off in the file at path, creating it (and dir).
// A full or failing disk is store.ErrUnusable, as SQLite's is.
func writeAt(dir, path string, buf []byte, off int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(dir, 0o755); err == nil {
			f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		}
	}
	if err != nil {
		return fileErr(err)
	}
	_, err = f.WriteAt(buf, off)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return fileErr(err)
}

// fileErr classes a result file's error as SQLite's are (see errClass).
func fileErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return fmt.Errorf("result file: the disk is full: %w: %w", store.ErrUnusable, err)
	case errors.Is(err, syscall.EIO), errors.Is(err, syscall.EROFS), errors.Is(err, os.ErrPermission):
		return fmt.Errorf("result file: %w: %w", store.ErrUnusable, err)
	}
	return fmt.Errorf("result file: %w", err)
}

// fileKey names a result file by what it holds.
type fileKey struct {
	kind, run string
	key       int
}

// fileIndex is what this process read of one result file: where each task's
// first record is, up to scanned bytes.
type fileIndex struct {
	id      int64
	scanned int64
	// bad is set at a record whose header does not hold: nothing after it
	// is read.
	bad bool
	// legacy is set when the step's table holds results (a store written
	// before result files), which come before the file's.
	legacy bool
	locs   map[string]recordLoc
	order  []string
}

// recordLoc is a record's offset and total length.
type recordLoc struct {
	off int64
	n   int
}

// fileIndexes is the store's index of the result files it read.
type fileIndexes struct {
	mu sync.Mutex
	m  map[fileKey]*fileIndex
}

// index returns the index of the result file of run and key of t, brought
// up to the file's committed length, with the file opened (nil, nil when
// there is none). The caller closes the file; the index is the caller's to
// read while it holds s.files.mu (index returns with it held).
func (s *Store) index(ctx context.Context, t resultTable, run string, key int) (*fileIndex, *os.File, error) {
	var id, size int64
	err := s.r.QueryRowContext(ctx, `SELECT id, size FROM result_files WHERE run = ? AND kind = ? AND key = ?`, run, t.name, key).Scan(&id, &size)
	k := fileKey{t.name, run, key}
	s.files.mu.Lock()
	if s.files.m == nil {
		s.files.m = map[fileKey]*fileIndex{}
	}
	if errors.Is(err, sql.ErrNoRows) {
		delete(s.files.m, k)
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	ix := s.files.m[k]
	if ix == nil || ix.id != id || ix.scanned > size {
		ix = &fileIndex{id: id, locs: map[string]recordLoc{}}
		// No result is put in the table any more: what it holds now is
		// all it will hold.
		err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+t.name+` WHERE run = ? AND `+t.key+` = ?)`, run, key).Scan(&ix.legacy)
		if err != nil {
			return nil, nil, err
		}
		s.files.m[k] = ix
	}
	f, err := os.Open(s.resultFile(id))
	if errors.Is(err, os.ErrNotExist) {
		// Deleted since the query by another process, or never written
		// past an empty batch.
		return ix, nil, nil
	}
	if err != nil {
		return nil, nil, fileErr(err)
	}
	if err := ix.scan(f, size); err != nil {
		f.Close()
		return nil, nil, fileErr(err)
	}
	return ix, f, nil
}

// scan indexes the records of f from ix.scanned up to size, reading their
// headers and ids only (values are checked when read).
func (ix *fileIndex) scan(f *os.File, size int64) error {
	head := make([]byte, recordHeader+64)
	for !ix.bad && ix.scanned+recordHeader <= size {
		n := int(min(int64(len(head)), size-ix.scanned))
		if _, err := f.ReadAt(head[:n], ix.scanned); err != nil && !(errors.Is(err, io.EOF)) {
			return err
		}
		idLen := int64(binary.LittleEndian.Uint32(head))
		valLen := int64(binary.LittleEndian.Uint32(head[4:]))
		total := recordHeader + idLen + valLen
		if idLen > maxRecordID || ix.scanned+total > size {
			ix.bad = true
			break
		}
		var id string
		if int(recordHeader+idLen) <= n {
			id = string(head[recordHeader : recordHeader+idLen])
		} else {
			b := make([]byte, idLen)
			if _, err := f.ReadAt(b, ix.scanned+recordHeader); err != nil {
				return err
			}
			id = string(b)
		}
		if _, ok := ix.locs[id]; !ok {
			ix.locs[id] = recordLoc{ix.scanned, int(total)}
			ix.order = append(ix.order, id)
		}
		ix.scanned += total
	}
	return nil
}

// readRecord returns the value of the record at loc, ok false when its
// bytes fail their checksum.
func readRecord(f *os.File, loc recordLoc) (value []byte, ok bool, err error) {
	b := make([]byte, loc.n)
	if _, err := f.ReadAt(b, loc.off); err != nil {
		return nil, false, err
	}
	idLen := int(binary.LittleEndian.Uint32(b))
	sum := crc32.Update(0, castagnoli, b[:8])
	sum = crc32.Update(sum, castagnoli, b[recordHeader:])
	if sum != binary.LittleEndian.Uint32(b[8:]) {
		return nil, false, nil
	}
	return b[recordHeader+idLen:], true, nil
}

// fileResult returns the result of taskID from its step's file, ok false
// when the file has none; legacy reports that the step's table may hold
// results too (see fileIndex), which come first.
func (s *Store) fileResult(ctx context.Context, t resultTable, run string, key int, taskID string) (value []byte, ok, legacy bool, err error) {
	ix, f, err := s.index(ctx, t, run, key)
	if ix == nil || f == nil {
		s.files.mu.Unlock()
		return nil, false, true, err
	}
	defer f.Close()
	loc, found := ix.locs[taskID]
	legacy = ix.legacy
	s.files.mu.Unlock()
	if !found {
		return nil, false, legacy, nil
	}
	value, ok, err = readRecord(f, loc)
	return value, ok, legacy, fileErr(err)
}

// scanFile calls fn with every result of the step's file in the order they
// were written (the first of a task's), skipping those whose bytes fail
// their checksum. seen holds task ids already given (a store written
// before result files keeps results in its table): they are skipped.
func (s *Store) scanFile(ctx context.Context, t resultTable, run string, key int, seen map[string]bool, fn func(string, []byte) error) error {
	ix, f, err := s.index(ctx, t, run, key)
	if ix == nil || f == nil {
		s.files.mu.Unlock()
		return err
	}
	defer f.Close()
	order := ix.order
	locs := make([]recordLoc, len(order))
	for i, id := range order {
		locs[i] = ix.locs[id]
	}
	s.files.mu.Unlock()
	for i, id := range order {
		if seen[id] {
			continue
		}
		value, ok, err := readRecord(f, locs[i])
		if err != nil {
			return fileErr(err)
		}
		if !ok {
			continue
		}
		if err := fn(id, value); err != nil {
			return err
		}
	}
	return nil
}

// fileCount returns how many tasks the step's file holds a result of, and
// their ids.
func (s *Store) fileTasks(ctx context.Context, t resultTable, run string, key int) ([]string, error) {
	ix, f, err := s.index(ctx, t, run, key)
	defer s.files.mu.Unlock()
	if f != nil {
		f.Close()
	}
	if ix == nil {
		return nil, err
	}
	return append([]string(nil), ix.order...), nil
}

// deleteFile removes the step's result file and its row in tx; the file
// itself is removed by the returned func, to call once tx commits.
func (s *Store) deleteFile(ctx context.Context, tx *sql.Tx, t resultTable, run string, key int) (func(), error) {
	var id int64
	err := tx.QueryRowContext(ctx, `DELETE FROM result_files WHERE run = ? AND kind = ? AND key = ? RETURNING id`, run, t.name, key).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	return func() {
		os.Remove(s.resultFile(id))
		s.files.mu.Lock()
		delete(s.files.m, fileKey{t.name, run, key})
		s.files.mu.Unlock()
	}, nil
}

// sweepResultFiles removes result files no row names: left by a process
// that died between a delete's commit and the file's removal. Only files
// of ids up to the largest one ever committed are removed, so a file
// another process is writing for a row not yet committed stays.
func (s *Store) sweepResultFiles(ctx context.Context) error {
	entries, err := os.ReadDir(s.resultsDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fileErr(err)
	}
	var maxID int64
	err = s.r.QueryRowContext(ctx, `SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'result_files'), 0)`).Scan(&maxID)
	if err != nil {
		return err
	}
	live := map[int64]bool{}
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM result_files`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		live[id] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		id, err := strconv.ParseInt(name, 10, 64)
		if !ok || err != nil || id > maxID || live[id] {
			continue
		}
		os.Remove(filepath.Join(s.resultsDir(), e.Name()))
	}
	return nil
}
