package main

import (
	"bytes"
	"io"
	"os"
	"sync"

	"github.com/mattn/go-isatty"
	"golang.org/x/term"
)

// console is the process's stderr shared by the log and the progress bar.
// On a terminal the bar is a line redrawn in place; a log line written
// while it is drawn first clears it, so the two never share a line, and the
// bar is drawn again below at its next update.
type console struct {
	mu sync.Mutex
	w  io.Writer
	// terminal says whether w is a terminal (a bar is drawn only there).
	terminal bool
	// barDrawn says the current line holds the bar.
	barDrawn bool
}

// newConsole wraps w, which is a terminal when it is a character device
// file such as os.Stderr in an interactive shell.
func newConsole(w io.Writer) *console {
	f, ok := w.(*os.File)
	return &console{w: w, terminal: ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))}
}

// width returns the terminal's width in columns, 0 when unknown (not a
// terminal).
func (c *console) width() int {
	f, ok := c.w.(*os.File)
	if !c.terminal || !ok {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}

// Write writes log output, clearing the bar's line first.
func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.barDrawn {
		if _, err := io.WriteString(c.w, "\r\033[K"); err != nil {
			return 0, err
		}
		c.barDrawn = false
	}
	return c.w.Write(p)
}

// barWriter is where the progress bar draws.
type barWriter struct{ c *console }

// bar returns the writer the progress bar draws with.
func (c *console) bar() io.Writer { return barWriter{c} }

func (b barWriter) Write(p []byte) (int, error) {
	b.c.mu.Lock()
	defer b.c.mu.Unlock()
	n, err := b.c.w.Write(p)
	// A bar that cleared or ended its line no longer holds it.
	b.c.barDrawn = len(p) > 0 && !bytes.HasSuffix(p, []byte("\n")) && !bytes.HasSuffix(p, []byte("\r"))
	return n, err
}
