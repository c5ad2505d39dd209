package sqlite_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/sqlite"
	"github.com/mgrpo/mgrpo/store/storetest"
)

// claimerEnv names the store file a helper claimer process works on.
const claimerEnv = "MGRPO_SQLITE_TEST_CLAIMER"

// TestHelperClaimer is not a test: TestTwoProcessesOneFile runs the test
// binary again with claimerEnv set to make it one of its claimer
// processes. It prints "ready" once the store is open, then claims and
// completes tasks, printing "claimed ID" for each, until the parent's
// tasks are in and none is left to claim.
func TestHelperClaimer(t *testing.T) {
	path := os.Getenv(claimerEnv)
	if path == "" {
		t.Skip("a helper process of TestTwoProcessesOneFile")
	}
	c := storetest.Context(t)
	s := MustOpen(t, path, sqlite.WithPollInterval(5*time.Millisecond))
	fmt.Println("ready")
	worker := fmt.Sprint("pid", os.Getpid())
	for {
		leases, err := s.Claim(c, store.ClaimRequest{Run: "r", Worker: worker, Max: 3, Lease: time.Minute, Wait: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if len(leases) == 0 {
			// Done once the parent's tasks are in and none is left to
			// claim: the others may have drained the queue before this
			// process first looked.
			n, err := s.Counts(c, "r")
			if err != nil {
				t.Fatal(err)
			}
			if n.Pending == 0 && n.Leased+n.Done > 0 {
				return
			}
			continue
		}
		for _, l := range leases {
			fmt.Println("claimed", l.Task.ID())
			if err := s.Complete(c, l); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestTwoProcessesOneFile has two other processes and this one claim from
// one file at once: SQLite's file locks keep them apart, and each task is
// claimed and completed exactly once.
func TestTwoProcessesOneFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := tempPath(t)
	s := MustOpen(t, path)
	c := storetest.Context(t)
	tasks := storetest.Tasks("r", 1000)
	type child struct {
		cmd    *exec.Cmd
		lines  chan string
		output strings.Builder
	}
	var children []*child
	for range 2 {
		ch := &child{lines: make(chan string, len(tasks)+16)}
		ch.cmd = exec.CommandContext(c, os.Args[0], "-test.run=^TestHelperClaimer$", "-test.count=1")
		ch.cmd.Env = append(os.Environ(), claimerEnv+"="+path)
		ch.cmd.Stderr = &ch.output
		out, err := ch.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := ch.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go readLines(out, ch.lines)
		children = append(children, ch)
	}
	for _, ch := range children {
		if line := <-ch.lines; line != "ready" {
			ch.cmd.Wait()
			t.Fatalf("a claimer process said %q, not ready (stderr: %s)", line, ch.output.String())
		}
	}
	if err := s.Enqueue(c, "r", tasks); err != nil {
		t.Fatal(err)
	}
	// This process joins once each other one has claimed a task (or
	// ended), so that all three claim at the same time.
	var theirs []string
	for _, ch := range children {
		for line := range ch.lines {
			if id, ok := strings.CutPrefix(line, "claimed "); ok {
				theirs = append(theirs, id)
				break
			}
		}
	}
	ids := make(chan string, len(tasks))
	if err := drain(c, s, "r", "parent", ids); err != nil {
		t.Fatal(err)
	}
	close(ids)
	var got []string
	for id := range ids {
		got = append(got, id)
	}
	counts := []int{len(got)}
	for i, ch := range children {
		n := 0
		if i < len(theirs) {
			n = 1
		}
		for line := range ch.lines {
			if id, ok := strings.CutPrefix(line, "claimed "); ok {
				got = append(got, id)
				n++
			}
		}
		if err := ch.cmd.Wait(); err != nil {
			t.Fatalf("claimer process: %v (stderr: %s)", err, ch.output.String())
		}
		counts = append(counts, n)
	}
	got = append(got, theirs...)
	t.Logf("tasks claimed by this process and the two others: %v", counts)
	checkOnce(t, got, tasks)
	if n, err := s.Counts(c, "r"); err != nil || n != (store.QueueCounts{Done: len(tasks)}) {
		t.Errorf("Counts = %+v, %v; want all %d done", n, err, len(tasks))
	}
}

// readLines sends r's lines to lines and closes it at the end.
func readLines(r io.Reader, lines chan<- string) {
	defer close(lines)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		lines <- sc.Text()
	}
}
