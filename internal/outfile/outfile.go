// Package outfile writes a command's output file, or stdout for "-", so
// that a failed write never leaves a partial file behind.
package outfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrCreate marks a path that cannot be created (the caller's argument
// names a place it cannot write): the user's mistake, not the machine's.
// The error's text is its cause's alone.
var ErrCreate = errors.New("cannot create the output file")

// createError is an ErrCreate whose message is its cause's.
type createError struct{ err error }

func (e createError) Error() string   { return e.err.Error() }
func (e createError) Unwrap() []error { return []error{e.err, ErrCreate} }

// Write runs write on path ("-" is stdout), buffered, and reports errors
// of the final flush and close too; a file whose write did not complete
// is removed. A path that cannot be created wraps ErrCreate.
func Write(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		bw := bufio.NewWriter(stdout)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	f, err := os.Create(path)
	if err != nil {
		return createError{err}
	}
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}
