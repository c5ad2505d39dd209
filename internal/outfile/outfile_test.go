package outfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	hello := func(w io.Writer) error { _, err := io.WriteString(w, "hello\n"); return err }
	t.Run("file", func(t *testing.T) {
		p := filepath.Join(dir, "out.txt")
		if err := Write(p, nil, hello); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != "hello\n" {
			t.Errorf("file holds %q, want hello", b)
		}
	})
	t.Run("stdout", func(t *testing.T) {
		var buf bytes.Buffer
		if err := Write("-", &buf, hello); err != nil || buf.String() != "hello\n" {
			t.Errorf("stdout got %q, %v", buf.String(), err)
		}
	})
	t.Run("a failed write leaves no file", func(t *testing.T) {
		p := filepath.Join(dir, "partial.txt")
		boom := errors.New("boom")
		err := Write(p, nil, func(w io.Writer) error { io.WriteString(w, "half"); return boom })
		if !errors.Is(err, boom) || errors.Is(err, ErrCreate) {
			t.Errorf("err = %v, want the writer's error", err)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("partial file left behind: %v", err)
		}
	})
	t.Run("a path that cannot be created", func(t *testing.T) {
		err := Write(filepath.Join(dir, "missing", "x.txt"), nil, hello)
		if !errors.Is(err, ErrCreate) || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("err = %v, want ErrCreate wrapping the create error", err)
		}
		var pe *os.PathError
		if !errors.As(err, &pe) || err.Error() != pe.Error() {
			t.Errorf("message %q, want the create error's alone", err)
		}
	})
}
