package main

import (
	"strings"
	"testing"
)

func TestBadCommandLinesAreReportedWholeWithTheFix(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"rolout"}, []string{`mgrpo has no command "rolout" (did you mean rollout?)`}},
		{[]string{"tool", "fetch"}, []string{`mgrpo tool has no command "fetch"`}},
		{[]string{"sim", "tasx"}, []string{`mgrpo sim has no command "tasx" (did you mean tasks?)`}},
		{[]string{"rollout", "--sim", "--batchsize", "3", "--grup-size", "2", "--out", "x"},
			[]string{"mgrpo rollout has no flag --batchsize (did you mean --batch-size?)", "mgrpo rollout has no flag --grup-size (did you mean --group-size?)"}},
		{[]string{"--log-levl", "warn", "sim", "tasks"}, []string{"mgrpo has no flag --log-levl (did you mean --log-level?)"}},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != 2 || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q; want 2 and nothing on stdout", tc.args, code, stdout)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q does not contain %q", tc.args, stderr, w)
			}
		}
	}
}
