package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mgrpo/mgrpo/run"
)

// TestHelpLayout checks the help of the commands that list the YAML keys
// (issue 50 item 6: 250 lines up to 289 wide, the keys before the options,
// judge and reasoner repeating 15 keys each): the options come first,
// then one table of the keys, a role's key once with its roles, and no
// line is wider than 80 columns when stdout is not a terminal.
func TestHelpLayout(t *testing.T) {
	for _, cmd := range []string{"rollout", "train", "eval"} {
		t.Run(cmd, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, cmd, "--help")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			opts, keys := strings.Index(stdout, "\nOPTIONS:\n"), strings.Index(stdout, "\nYAML KEYS")
			if opts < 0 || keys < opts {
				t.Fatalf("want OPTIONS, then YAML KEYS (at %d, %d):\n%s", opts, keys, stdout)
			}
			for i, line := range strings.Split(stdout, "\n") {
				if n := utf8.RuneCountInString(line); n > defaultHelpWidth {
					t.Errorf("line %d is %d columns wide: %q", i+1, n, line)
				}
			}
			table := stdout[keys:]
			for _, k := range run.KeyDocs() {
				if strings.HasPrefix(k.Key, "train.") != (cmd == "train") || cmd == "eval" && (k.Scope != run.ScopeAgent || k.Key == "out") {
					continue
				}
				want := k.Key
				for _, r := range roleKeys {
					if rest, ok := strings.CutPrefix(k.Key, r.name+"."); ok {
						want = "ROLE." + rest + " ["
						if strings.Contains(table, "\n   "+k.Key+" ") {
							t.Errorf("%s has a row of its own; want it in %s", k.Key, want)
						}
					}
				}
				if !strings.Contains(table, "\n   "+want) {
					t.Errorf("the key table lacks %s", want)
				}
			}
			if cmd != "train" && strings.Count(table, "ROLE.model [") != 1 {
				t.Errorf("want one ROLE.model row:\n%s", table)
			}
		})
	}
	if !strings.Contains(keyTableOf(t), "ROLE.model [pejr]") {
		t.Error("ROLE.model should apply to planner, executor, judge and reasoner")
	}
}

func keyTableOf(t *testing.T) string {
	t.Helper()
	return keyTable(run.KeyDocs(), func(run.KeyDoc) bool { return true }, defaultHelpWidth)
}

func TestWrapTextNeverStartsALineWithAFlag(t *testing.T) {
	text := "the planner's model: set it with --planner-model or the executor's with --executor-model, and so on --x --y"
	for width := 30; width <= 60; width++ {
		out := wrapText(text, 4, width, "    ")
		for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "-") {
				t.Errorf("width %d: a line starts with a flag: %q", width, line)
			}
		}
		if got := strings.Join(strings.Fields(out), " "); got != text {
			t.Errorf("width %d: words changed: %q", width, got)
		}
	}
}
