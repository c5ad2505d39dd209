package doccheck

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The rule TestDocExamplesRun follows: every line of a fenced code block of
// README.md and docs/*.md that runs mgrpo (`mgrpo …` or `go run ./cmd/mgrpo
// …`) is executed, in file order, in one temporary directory per file (as a
// user following that page in one clone), with a binary built from this
// tree — unless the line
//   - holds a placeholder (a word in capitals such as URL or RUN_DIR, `…`,
//     `[`) or a shell variable or loop;
//   - names a host other than loopback, or a redis:// store (a real server);
//   - names a loopback URL that no server started earlier in the file
//     printed (an agent or server the page expects you to run);
//   - has --gateway-addr (it waits for your agent to pull tasks);
//   - reads a --tasks, --data or --config file that the directory does not
//     hold;
//   - or its block is marked by an HTML comment `<!-- doccheck: skip REASON
//     -->` on the line above the fence (a run too long or too large for
//     CI, or one killed by hand).
// Each skipped line is logged with its reason. A line ending in `&`, and a
// `sim` without `tasks`, `view` or `corpus serve`, is a server: it is
// started on loopback port 0 (so no example collides with a port in use),
// the addresses it prints replace the ones the documentation shows in its
// comments, it must print its first line within a minute, and is stopped
// with SIGINT at the end of its file (or, in the foreground, at once) and
// must exit 0. Every other line must exit 0.

// example is one command line of a fenced block.
type example struct {
	file, text, skip string
	line             int
	// shown maps a URL's host:port as the documentation's comments show it
	// to the output name (llm, web) printed next to it.
	shown map[string]string
}

var (
	placeholder = regexp.MustCompile(`^[A-Z][A-Z0-9_]+(\.[a-z]+)?$`)
	shownAddr   = regexp.MustCompile(`\b([a-z]+) (https?://(?:127\.0\.0\.1|localhost):\d+)`)
	skipMarker  = regexp.MustCompile(`<!-- doccheck: skip (.+?) -->`)
)

// fencedExamples returns the mgrpo lines of path's fenced blocks.
func fencedExamples(t *testing.T, path, rel string) []example {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var (
		out       []example
		inFence   bool
		blockSkip string
		pending   *example
	)
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			blockSkip = ""
			if inFence && i > 0 {
				if m := skipMarker.FindStringSubmatch(lines[i-1]); m != nil {
					blockSkip = "marked: " + m[1]
				}
			}
			continue
		}
		if !inFence {
			continue
		}
		if pending != nil {
			pending.text += " " + line
		} else {
			pending = &example{file: rel, line: i + 1, text: line, skip: blockSkip}
		}
		if strings.HasSuffix(strings.TrimSpace(line), `\`) {
			pending.text = strings.TrimSuffix(strings.TrimSpace(pending.text), `\`)
			continue
		}
		e := *pending
		pending = nil
		toks := strings.Fields(e.text)
		if len(toks) == 0 || !startsProgram(toks, 0) && !(len(toks) > 2 && toks[0] == "go" && toks[1] == "run" && startsProgram(toks, 2)) {
			// Comment lines below a server show what it printed.
			if strings.HasPrefix(strings.TrimSpace(line), "#") && len(out) > 0 {
				for _, m := range shownAddr.FindAllStringSubmatch(line, -1) {
					addShown(&out[len(out)-1], m)
				}
			}
			continue
		}
		if _, comment, ok := strings.Cut(e.text, "#"); ok {
			for _, m := range shownAddr.FindAllStringSubmatch(comment, -1) {
				addShown(&e, m)
			}
		}
		out = append(out, e)
	}
	return out
}

func addShown(e *example, m []string) {
	if e.shown == nil {
		e.shown = map[string]string{}
	}
	if u, err := url.Parse(m[2]); err == nil {
		e.shown[u.Host] = m[1]
	}
}

// args returns the mgrpo arguments of an example (after `mgrpo` or `go run
// ./cmd/mgrpo`, up to a comment) and whether it runs in the background.
func (e example) args() (args []string, background bool) {
	text, _, _ := strings.Cut(e.text, " #")
	toks := strings.Fields(text)
	for i := range toks {
		if strings.HasSuffix(toks[i], "/mgrpo") || toks[i] == "mgrpo" {
			toks = toks[i+1:]
			break
		}
	}
	if n := len(toks); n > 0 && toks[n-1] == "&" {
		return toks[:n-1], true
	}
	return toks, false
}

// isServer reports whether args serve until interrupted.
func isServer(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "view":
		return true
	case "sim":
		return len(args) < 2 || args[1] != "tasks"
	case "corpus":
		return len(args) > 1 && args[1] == "serve"
	}
	return false
}

// whySkip applies the rule to one example's arguments in dir, with the
// loopback hosts started servers printed.
func whySkip(args []string, dir string, started map[string]bool) string {
	for i, a := range args {
		switch {
		case strings.Contains(a, "…"), strings.HasPrefix(a, "["), strings.Contains(a, "$"), a == "do", a == "for":
			return "a placeholder or shell construct: " + a
		case placeholder.MatchString(a):
			return "a placeholder: " + a
		case a == "--gateway-addr" || strings.HasPrefix(a, "--gateway-addr="):
			return "waits for your agent to pull its tasks from the gateway"
		case strings.HasPrefix(a, "redis://"):
			return "needs a Redis server: " + a
		case strings.Contains(a, "://"):
			u, err := url.Parse(a)
			if err != nil || u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost" {
				return "needs a real server: " + a
			}
			if !started[u.Host] {
				return "needs a server the page does not start: " + a
			}
		}
		if (a == "--tasks" || a == "--data" || a == "--config") && i+1 < len(args) {
			p := args[i+1]
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			if _, err := os.Stat(p); err != nil {
				return "needs a file the page does not make: " + args[i+1]
			}
		}
	}
	return ""
}

// server is a started server example.
type server struct {
	where string
	cmd   *exec.Cmd
	lines chan string
	done  chan error
	log   *bytes.Buffer
}

func TestDocExamplesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the documentation's examples are not run")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(root, "README.md")}
	more, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, more...)
	bin := mgrpoBinary(t, root)
	ran := map[string]bool{}
	for _, path := range files {
		rel, _ := filepath.Rel(root, path)
		exs := fencedExamples(t, path, rel)
		if len(exs) == 0 {
			continue
		}
		t.Run(rel, func(t *testing.T) {
			dir := t.TempDir()
			started := map[string]bool{}
			replace := map[string]string{} // shown host:port → actual
			var servers []*server
			defer func() {
				for _, s := range servers {
					stopServer(t, s)
				}
			}()
			for _, ex := range exs {
				args, background := ex.args()
				where := fmt.Sprintf("%s:%d: mgrpo %s", ex.file, ex.line, strings.Join(args, " "))
				for i, a := range args {
					for shown, actual := range replace {
						a = strings.ReplaceAll(a, shown, actual)
					}
					args[i] = a
				}
				why := ex.skip
				if why == "" {
					why = whySkip(args, dir, started)
				}
				if why != "" {
					t.Logf("skipped %s: %s", where, why)
					continue
				}
				ran[args[0]] = true
				if background || isServer(args) {
					s := startServer(t, bin, dir, serverArgs(args), where)
					for name, actual := range s.printed(t) {
						started[actual] = true
						for shown, n := range ex.shown {
							if n == name {
								replace[shown] = actual
							}
						}
					}
					if background {
						servers = append(servers, s)
					} else {
						stopServer(t, s)
					}
					continue
				}
				runExample(t, bin, dir, args, where)
			}
		})
	}
	// The set that runs must stay meaningful.
	for _, c := range []string{"rollout", "train", "rescore", "report", "replay", "eval", "view", "sim"} {
		if !ran[c] {
			t.Errorf("no documentation example of `mgrpo %s` ran: the rule above skipped all of them", c)
		}
	}
}

// serverArgs puts a server on loopback port 0.
func serverArgs(args []string) []string {
	out := append([]string(nil), args...)
	switch args[0] {
	case "view":
		return append(out[:1], append([]string{"--listen", "127.0.0.1:0"}, out[1:]...)...)
	case "sim":
		return append(out, "--llm", "127.0.0.1:0", "--web", "127.0.0.1:0")
	}
	return out
}

func runExample(t *testing.T, bin, dir string, args []string, where string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v after %s\n%s", where, err, time.Since(start).Round(time.Second), tail(string(out), 3000))
	}
	t.Logf("ran %s in %s", where, time.Since(start).Round(100*time.Millisecond))
}

func startServer(t *testing.T, bin, dir string, args []string, where string) *server {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{where: where, cmd: cmd, lines: make(chan string, 64), done: make(chan error, 1), log: &bytes.Buffer{}}
	cmd.Stderr = s.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		s.done <- cmd.Wait()
	}()
	return s
}

// printed reads the `name URL` lines a server prints as it starts: the
// first within a minute, the rest as they follow it; it returns each
// name's host:port.
func (s *server) printed(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	wait := time.Minute
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				if len(out) == 0 {
					err := <-s.done
					t.Fatalf("%s: exited (%v) before printing its address\n%s", s.where, err, tail(s.log.String(), 3000))
				}
				return out
			}
			name, addr, _ := strings.Cut(line, " ")
			if u, err := url.Parse(addr); err == nil && u.Host != "" {
				out[name] = u.Host
			}
			wait = 2 * time.Second
		case <-time.After(wait):
			if len(out) == 0 {
				t.Fatalf("%s: printed no address within a minute\n%s", s.where, tail(s.log.String(), 3000))
			}
			return out
		}
	}
}

// stopServer interrupts a server as Ctrl-C does; it must exit 0.
func stopServer(t *testing.T, s *server) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Errorf("%s: interrupt: %v", s.where, err)
	}
	go func() {
		for range s.lines {
		}
	}()
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("%s: stopped with Ctrl-C: %v, want exit 0\n%s", s.where, err, tail(s.log.String(), 3000))
		}
	case <-time.After(time.Minute):
		s.cmd.Process.Kill()
		t.Errorf("%s: still running a minute after Ctrl-C", s.where)
	}
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
