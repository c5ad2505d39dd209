// Package benchproc runs a server for a benchmark in a child process (the
// test binary itself, running one helper test), so that the benchmark's
// process CPU time is its own and not the server's.
package benchproc

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Start runs this test binary's test named test (an exact name) with env
// added to the environment, waits for the first line of its standard
// output that starts with prefix, and returns that line and the command
// (for its pid). The rest of the output is drained. The helper test must
// serve until its standard input closes, which happens at tb's cleanup;
// cleanup then waits for it to exit.
func Start(tb testing.TB, test string, env []string, prefix string) (string, *exec.Cmd) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stdin.Close(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, prefix) {
			go func() {
				for sc.Scan() {
				}
			}()
			return line, cmd
		}
	}
	tb.Fatalf("%s exited before announcing itself (a line starting with %q): %v", test, prefix, sc.Err())
	return "", nil
}
