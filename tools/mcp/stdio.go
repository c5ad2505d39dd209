package mcp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrGarbage marks a stdio server that wrote a line on stdout that is not
// a JSON-RPC message: stdout is the protocol's channel, so the session
// cannot go on (servers log to stderr).
var ErrGarbage = errors.New("stdout line is not a JSON-RPC message")

// stopGrace is how long a stdio server has to exit after its stdin closes
// before its process group is killed.
const stopGrace = 2 * time.Second

// process is one run of a stdio server: the command, its stdin and stdout
// as the session's transport, the last lines of its stderr.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tail
	guard  *lineGuard
	done   chan struct{} // closed when the process has exited
	err    error         // its exit status, set before done closes
	once   sync.Once
}

// startProcess starts the server's command in its own process group (so
// that stopping it stops what it started, npx's node included) and returns
// it with the transport over its stdin and stdout.
func startProcess(c ServerConfig) (*process, sdk.Transport, error) {
	cmd := exec.Command(c.Command, c.Args...)
	cmd.Env = c.Env
	cmd.Dir = c.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &process{cmd: cmd, stderr: newTail(20, 4096), done: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	p.guard = &lineGuard{r: bufio.NewReaderSize(stdout, 64<<10)}
	return p, &sdk.IOTransport{Reader: p.guard, Writer: p.stdin}, nil
}

// stop closes the server's stdin, waits stopGrace for it to exit, then
// kills its process group. It is idempotent and returns once the process
// has exited.
func (p *process) stop() {
	p.once.Do(func() {
		_ = p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(stopGrace):
		}
		// The group may hold children of an exited parent (npx).
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
}

// kill ends the process group at once (tests: a server dying mid-run).
func (p *process) kill() { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }

// describe says how the process ended and what it last wrote on stderr,
// for errors.
func (p *process) describe() string {
	var parts []string
	select {
	case <-p.done:
		if p.err != nil {
			parts = append(parts, "exited: "+p.err.Error())
		} else {
			parts = append(parts, "exited with status 0")
		}
	default:
	}
	if t := p.stderr.String(); t != "" {
		parts = append(parts, "stderr's last lines:\n"+indent(t))
	} else {
		parts = append(parts, "nothing on stderr")
	}
	return strings.Join(parts, "; ")
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n")
}

// lineGuard passes stdout through line by line and fails on the first
// line that cannot start a JSON-RPC message, with that line quoted, so a
// server printing banners on stdout is a clear error at once instead of
// a decoder's message or a wait for an answer that never comes.
type lineGuard struct {
	r       *bufio.Reader
	buf     []byte
	err     error
	garbage atomic.Pointer[error] // the ErrGarbage error, once seen
}

// failed returns the ErrGarbage error the guard stopped on, or nil.
func (g *lineGuard) failed() error {
	if p := g.garbage.Load(); p != nil {
		return *p
	}
	return nil
}

func (g *lineGuard) Read(p []byte) (int, error) {
	for len(g.buf) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		line, err := g.r.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '{' && t[0] != '[' {
			if len(t) > 120 {
				t = append(t[:120:120], "…"...)
			}
			g.err = fmt.Errorf("%w: %q", ErrGarbage, t)
			g.garbage.Store(&g.err)
			return 0, g.err
		}
		g.buf, g.err = line, err
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

func (g *lineGuard) Close() error { return nil }

// tail keeps the last lines written to it (at most max lines and size
// bytes): a server's stderr, quoted in errors. Safe for concurrent use.
type tail struct {
	mu    sync.Mutex
	lines []string
	part  []byte
	max   int
	size  int
}

func newTail(maxLines, size int) *tail { return &tail{max: maxLines, size: size} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part = append(t.part, p...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			break
		}
		t.push(string(t.part[:i]))
		t.part = t.part[i+1:]
	}
	if len(t.part) > t.size {
		t.push(string(t.part[:t.size]))
		t.part = t.part[:0]
	}
	return len(p), nil
}

func (t *tail) push(l string) {
	l = strings.TrimRight(l, "\r")
	if len(l) > 300 {
		l = l[:300] + "…"
	}
	t.lines = append(t.lines, l)
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

// String returns the kept lines, a partial last line included.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := t.lines
	if len(t.part) > 0 {
		lines = append(slices.Clone(lines), string(t.part))
	}
	return strings.Join(lines, "\n")
}
