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
)

// claimerEnv names the store file a helper claimer process works on.
const claimerEnv = "MGRPO_SQLITE_TEST_CLAIMER"

// TestHelperClaimer is not a test: TestTwoProcessesOneFile runs the test
// binary again with claimerEnv set to make it one of its claimer
// processes. It prints "ready" once the store is open, waits for the
// parent's tasks, then claims and completes tasks until none are left,
// printing "claimed ID" for each.
func TestHelperClaimer(t *testing.T) {
	path := os.Getenv(claimerEnv)
	if path == "" {
		t.Skip("a helper process of TestTwoProcessesOneFile")
	}
	c := testCtx(t)
	s := MustOpen(t, path)
	fmt.Println("ready")
	worker := fmt.Sprint("pid", os.Getpid())
	wait := 30 * time.Second
	for {
		leases, err := s.Claim(c, store.ClaimRequest{Run: "r", Worker: worker, Max: 3, Lease: time.Minute, Wait: wait})
		if err != nil {
			t.Fatal(err)
		}
		if len(leases) == 0 {
			return
		}
		wait = 0
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
	c := testCtx(t)
	tasks := someTasks("r", 400)
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
	for _, ch := range children {
		n := 0
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
