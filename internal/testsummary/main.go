// Command testsummary reads `go test -json` on stdin and prints what a
// person waiting for the suite wants to see (issue 50: `go test` printed
// nothing for minutes and skipped tests silently): each package as it
// finishes, each skipped test with its reason, each failed test with its
// output, and, while packages run, a line every minute saying which ones
// and how far they are. It exits 1 when a test or a package failed.
//
//	go test -race -json ./... | go run ./internal/testsummary
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

func main() {
	os.Exit(summarize(os.Stdin, os.Stdout, time.Minute))
}

// event is one line of `go test -json` (test2json's TestEvent).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// pkgState is what summarize knows of a package while it runs.
type pkgState struct {
	start   time.Time
	done    int
	running string
	output  map[string][]string
}

// summarize prints the summary of the events read from r to w, a progress
// line every tick of the events' own clock, and returns the exit status.
func summarize(r io.Reader, w io.Writer, tick time.Duration) int {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	pkgs := map[string]*pkgState{}
	var lastTick time.Time
	status := 0
	for sc.Scan() {
		var e event
		if err := decode(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(w, sc.Text()) // a build error or other plain text
			continue
		}
		p := pkgs[e.Package]
		if p == nil {
			p = &pkgState{start: e.Time, output: map[string][]string{}}
			pkgs[e.Package] = p
		}
		switch {
		case e.Action == "output":
			p.output[e.Test] = append(p.output[e.Test], e.Output)
		case e.Action == "run" && e.Test != "":
			p.running = e.Test
		case e.Test != "" && e.Action == "skip" && !strings.Contains(e.Test, "/"):
			p.done++
			fmt.Fprintf(w, "SKIP  %s %s: %s\n", short(e.Package), e.Test, skipReason(p.output[e.Test]))
		case e.Test != "" && e.Action == "fail":
			p.done++
			status = 1
			fmt.Fprintf(w, "FAIL  %s %s (%.1fs)\n%s", short(e.Package), e.Test, e.Elapsed, strings.Join(p.output[e.Test], ""))
		case e.Test != "" && e.Action == "pass":
			p.done++
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			word := map[string]string{"pass": "ok   ", "fail": "FAIL ", "skip": "none "}[e.Action]
			if e.Action == "fail" {
				status = 1
				if out := p.output[""]; len(out) > 0 {
					fmt.Fprint(w, strings.Join(out, ""))
				}
			}
			fmt.Fprintf(w, "%s %s %.1fs\n", word, short(e.Package), e.Elapsed)
			delete(pkgs, e.Package)
		}
		if !e.Time.IsZero() {
			if lastTick.IsZero() {
				lastTick = e.Time
			}
			if e.Time.Sub(lastTick) >= tick {
				lastTick = e.Time
				progress(w, pkgs, e.Time)
			}
		}
	}
	return status
}

// decode reads one JSON event; a line that is not one is an error.
func decode(b []byte, e *event) error {
	if len(b) == 0 || b[0] != '{' {
		return fmt.Errorf("not an event")
	}
	return json.Unmarshal(b, e)
}

// progress says which packages are still running, for how long, how many
// of their tests are done and which one runs.
func progress(w io.Writer, pkgs map[string]*pkgState, now time.Time) {
	var names []string
	for name, p := range pkgs {
		if p.running != "" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return
	}
	sort.Strings(names)
	var parts []string
	for _, name := range names {
		p := pkgs[name]
		parts = append(parts, fmt.Sprintf("%s (%s, %d tests done, running %s)", short(name), now.Sub(p.start).Round(time.Second), p.done, p.running))
	}
	fmt.Fprintf(w, "...   still running: %s\n", strings.Join(parts, "; "))
}

// skipReason is the message a skipped test gave: its t.Skip line.
func skipReason(out []string) string {
	for _, line := range out {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "---") || strings.HasPrefix(line, "===") || line == "" {
			continue
		}
		// "file_test.go:26: MGRPO_TEST_REDIS is not set …"
		if i := strings.Index(line, ".go:"); i >= 0 {
			if j := strings.Index(line[i+4:], ": "); j >= 0 {
				return line[i+4+j+2:]
			}
		}
		return line
	}
	return "(no reason given)"
}

// short drops the module path from a package name.
func short(pkg string) string {
	return strings.TrimPrefix(pkg, "github.com/mgrpo/mgrpo/")
}
