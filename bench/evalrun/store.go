package evalrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/report"
)

// resultsLog is results.jsonl opened for appending. It is used by one goroutine.
type resultsLog struct {
	f    *os.File
	path string
	buf  bytes.Buffer
}

// openResults prepares dir/results.jsonl for appending, creating dir when missing, and returns the
// results already in it. A last line without its newline is a write cut short (a crash, a full
// disk): it is kept when it parses, else it is dropped and the file is rewritten without it, and
// dropped reports that. Any other malformed line is an error: the file is not the runner's to repair.
func openResults(dir string) (_ *resultsLog, prior []bench.Result, dropped bool, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, false, fmt.Errorf("eval dir: %w", err)
	}
	path := filepath.Join(dir, report.ResultsFile)
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, false, fmt.Errorf("resume: %w", err)
	}
	cut := bytes.LastIndexByte(data, '\n') + 1
	head, tail := data[:cut], data[cut:]
	prior, err = bench.ReadResults(bytes.NewReader(head), path)
	if err != nil {
		return nil, nil, false, fmt.Errorf("resume: %w", err)
	}
	needNewline := false
	if len(tail) > 0 {
		var last bench.Result
		if json.Unmarshal(tail, &last) == nil && last.ID != "" {
			prior = append(prior, last)
			needNewline = true
		} else {
			dropped = len(bytes.TrimSpace(tail)) > 0
			if err := rewrite(path, head); err != nil {
				return nil, nil, false, fmt.Errorf("resume: drop the truncated last line: %w", err)
			}
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, false, fmt.Errorf("open results: %w", err)
	}
	if needNewline {
		if _, err := f.Write([]byte{'\n'}); err != nil {
			f.Close()
			return nil, nil, false, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return &resultsLog{f: f, path: path}, prior, dropped, nil
}

// append writes one result as a single line with a single write, so that a crash leaves at most one
// partial line, the last.
func (l *resultsLog) append(r bench.Result) error {
	l.buf.Reset()
	if err := bench.WriteResult(&l.buf, r); err != nil {
		return err
	}
	if _, err := l.f.Write(l.buf.Bytes()); err != nil {
		return fmt.Errorf("write %s: %w", l.path, err)
	}
	return nil
}

// close syncs and closes the file.
func (l *resultsLog) close() error {
	serr := l.f.Sync()
	cerr := l.f.Close()
	if err := errors.Join(serr, cerr); err != nil {
		return fmt.Errorf("close %s: %w", l.path, err)
	}
	return nil
}

// rewrite replaces path's content with body through a temporary file and a rename.
func rewrite(path string, body []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(body)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr, os.Chmod(tmp.Name(), 0o644)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
