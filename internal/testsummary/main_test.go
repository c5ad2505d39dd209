package main

import (
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	at := func(s int) string {
		return time.Date(2026, 12, 7, 12, 0, s, 0, time.UTC).Format(time.RFC3339Nano)
	}
	lines := []string{
		`{"Time":"` + at(0) + `","Action":"start","Package":"github.com/mgrpo/mgrpo/cmd/mgrpo"}`,
		`{"Time":"` + at(0) + `","Action":"run","Package":"github.com/mgrpo/mgrpo/cmd/mgrpo","Test":"TestRedis"}`,
		`{"Time":"` + at(0) + `","Action":"output","Package":"github.com/mgrpo/mgrpo/cmd/mgrpo","Test":"TestRedis","Output":"=== RUN   TestRedis\n"}`,
		`{"Time":"` + at(1) + `","Action":"output","Package":"github.com/mgrpo/mgrpo/cmd/mgrpo","Test":"TestRedis","Output":"    redis_test.go:26: MGRPO_TEST_REDIS is not set\n"}`,
		`{"Time":"` + at(1) + `","Action":"output","Package":"github.com/mgrpo/mgrpo/cmd/mgrpo","Test":"TestRedis","Output":"--- SKIP: TestRedis (0.00s)\n"}`,
		`{"Time":"` + at(1) + `","Action":"skip","Package":"github.com/mgrpo/mgrpo/cmd/mgrpo","Test":"TestRedis","Elapsed":0}`,
		`{"Time":"` + at(2) + `","Action":"run","Package":"github.com/mgrpo/mgrpo/cmd/mgrpo","Test":"TestSlow"}`,
		`{"Time":"` + at(50) + `","Action":"run","Package":"github.com/mgrpo/mgrpo/llm","Test":"TestX"}`,
		`{"Time":"` + at(51) + `","Action":"output","Package":"github.com/mgrpo/mgrpo/llm","Test":"TestX","Output":"    x_test.go:9: got 1, want 2\n"}`,
		`{"Time":"` + at(51) + `","Action":"fail","Package":"github.com/mgrpo/mgrpo/llm","Test":"TestX","Elapsed":1}`,
		`{"Time":"` + at(52) + `","Action":"fail","Package":"github.com/mgrpo/mgrpo/llm","Elapsed":2}`,
		`# github.com/mgrpo/mgrpo/broken`,
		`{"Time":"` + at(59) + `","Action":"pass","Package":"github.com/mgrpo/mgrpo/cmd/mgrpo","Test":"TestSlow","Elapsed":57}`,
		`{"Time":"` + at(59) + `","Action":"pass","Package":"github.com/mgrpo/mgrpo/cmd/mgrpo","Elapsed":59}`,
	}
	var out strings.Builder
	status := summarize(strings.NewReader(strings.Join(lines, "\n")), &out, 30*time.Second)
	got := out.String()
	for _, want := range []string{
		"SKIP  cmd/mgrpo TestRedis: MGRPO_TEST_REDIS is not set\n",
		"...   still running: cmd/mgrpo (50s, 1 tests done, running TestSlow); llm (0s, 0 tests done, running TestX)\n",
		"FAIL  llm TestX (1.0s)\n    x_test.go:9: got 1, want 2\n",
		"FAIL  llm 2.0s\n",
		"# github.com/mgrpo/mgrpo/broken\n",
		"ok    cmd/mgrpo 59.0s\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if status != 1 {
		t.Errorf("status %d with a failed test, want 1", status)
	}
	if s := summarize(strings.NewReader(lines[0]+"\n"+lines[len(lines)-1]), &out, time.Minute); s != 0 {
		t.Errorf("status %d of a passing package, want 0", s)
	}
}
