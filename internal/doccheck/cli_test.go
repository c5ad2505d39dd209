package doccheck

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// command is what `mgrpo … --help` says about one command: its flags (names
// without dashes, mapped to whether they take a value) and its subcommands.
type command struct {
	flags map[string]bool
	subs  map[string]*command
}

// helpOption matches a flag name in the names part of an OPTIONS line of
// urfave/cli's help ("--planner-url URL [ --planner-url URL ]", "--help, -h").
var helpOption = regexp.MustCompile(`^--?([A-Za-z0-9][A-Za-z0-9-]*)$`)

// parseHelp reads the COMMANDS and (GLOBAL) OPTIONS sections of a help text.
func parseHelp(text string) (flags map[string]bool, subs []string) {
	// Every command has --help, though help that groups flags by category
	// does not list it.
	flags = map[string]bool{"help": false, "h": false}
	section := ""
	// entryIndent is the indentation of the section's entries: a line
	// indented further continues the entry above (help wrapped to the
	// terminal's width).
	entryIndent := -1
	for _, line := range strings.Split(text, "\n") {
		if line != "" && line[0] != ' ' && strings.HasSuffix(line, ":") {
			section, entryIndent = strings.TrimSuffix(line, ":"), -1
			continue
		}
		names, _, _ := strings.Cut(strings.TrimSpace(line), "  ")
		if names == "" {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if entryIndent < 0 {
			entryIndent = indent
		}
		if indent > entryIndent {
			continue
		}
		switch section {
		case "COMMANDS":
			for _, n := range strings.Split(names, ",") {
				if n = strings.TrimSpace(n); n != "help" && n != "h" {
					subs = append(subs, n)
				}
			}
		case "OPTIONS", "GLOBAL OPTIONS":
			if !strings.HasPrefix(names, "-") {
				continue
			}
			var last string
			for _, tok := range strings.Fields(strings.NewReplacer(",", " ", "[", " ", "]", " ").Replace(names)) {
				if m := helpOption.FindStringSubmatch(tok); m != nil {
					last = m[1]
					if _, ok := flags[last]; !ok {
						flags[last] = false
					}
					continue
				}
				if last != "" {
					flags[last] = true // a value placeholder follows the flag
				}
			}
		}
	}
	return flags, subs
}

// cliSpec builds the CLI once and walks its help: `mgrpo --help`, then each
// command's and subcommand's `--help`.
func cliSpec(t *testing.T, root string) *command {
	t.Helper()
	bin := mgrpoBinary(t, root)
	var walk func(path []string) *command
	walk = func(path []string) *command {
		out, err := exec.Command(bin, append(append([]string{}, path...), "--help")...).CombinedOutput()
		if err != nil {
			t.Fatalf("mgrpo %s --help: %v\n%s", strings.Join(path, " "), err, out)
		}
		flags, subs := parseHelp(string(out))
		c := &command{flags: flags, subs: map[string]*command{}}
		for _, s := range subs {
			c.subs[s] = walk(append(append([]string{}, path...), s))
		}
		return c
	}
	spec := walk(nil)
	if len(spec.subs) == 0 || len(spec.flags) == 0 {
		t.Fatalf("mgrpo --help listed no commands or no global flags: the help format changed?")
	}
	return spec
}

// use is one command line found in the documentation.
type use struct {
	file string
	line int
	text string
}

// inlineCode matches a Markdown code span.
var inlineCode = regexp.MustCompile("`([^`]+)`")

// commandUses returns the code of a documentation file that may hold mgrpo
// command lines: in Markdown, the lines of fenced blocks (a line ending in
// a backslash joined with the next) and code spans elsewhere; in other files
// (the examples' YAML), the comments.
func commandUses(t *testing.T, path, rel string) []use {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	markdown := strings.HasSuffix(path, ".md")
	var (
		uses    []use
		inFence bool
		pending *use
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !markdown {
			if _, comment, ok := strings.Cut(line, "#"); ok {
				uses = append(uses, use{rel, n, comment})
			}
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
				uses = append(uses, use{rel, n, m[1]})
			}
			continue
		}
		if pending != nil {
			pending.text += " " + line
		} else {
			pending = &use{rel, n, line}
		}
		if strings.HasSuffix(strings.TrimSpace(line), `\`) {
			pending.text = strings.TrimSuffix(strings.TrimSpace(pending.text), `\`)
			continue
		}
		uses = append(uses, *pending)
		pending = nil
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return uses
}

// isCommandWord reports whether a token can be a command name (not a
// placeholder such as COMMAND, a path or an ellipsis).
var isCommandWord = regexp.MustCompile(`^[a-z][a-z0-9-]*$`).MatchString

// docFlag matches a flag as documentation writes it: --name or -n, maybe
// with =value.
var docFlag = regexp.MustCompile(`^--?([a-z][a-z0-9-]*)(=.*)?$`)

// checkLine reports every mgrpo command, subcommand or flag of text the CLI
// does not have. Only what follows a token `mgrpo` (or `…/mgrpo`, as in
// `go run ./cmd/mgrpo`) up to a shell separator is read, so the flags of
// other programs on the line (vllm serve, curl) are never taken for mgrpo's.
func checkLine(spec *command, text string) []string {
	var problems []string
	toks := strings.Fields(text)
	for i := 0; i < len(toks); i++ {
		if !startsProgram(toks, i) {
			continue
		}
		cmd, path := spec, "mgrpo"
		atCommand := true // the next word may name a (sub)command
		for j := i + 1; j < len(toks); j++ {
			tok := toks[j]
			if tok == "|" || tok == "||" || tok == "&&" || tok == "&" || tok == ";" || strings.HasPrefix(tok, "#") || strings.HasPrefix(tok, ">") {
				break
			}
			last := strings.HasSuffix(tok, ";")
			tok = strings.Trim(tok, "[](),;`'\"")
			if m := docFlag.FindStringSubmatch(tok); m != nil {
				takesValue, ok := cmd.flags[m[1]]
				if !ok {
					problems = append(problems, path+" has no flag "+tok)
				} else if takesValue && m[2] == "" && j+1 < len(toks) {
					j++ // its value
					last = last || strings.HasSuffix(toks[j], ";")
				}
			} else if atCommand && len(cmd.subs) > 0 && isCommandWord(tok) {
				sub, ok := cmd.subs[tok]
				if !ok {
					// A word after a command with flags of its own may be
					// an argument; after the program, or a group of
					// subcommands only, it must name a command.
					if cmd == spec || !hasOwnFlags(cmd) {
						problems = append(problems, path+" has no command "+tok)
					}
					atCommand = false
				} else {
					cmd, path = sub, path+" "+tok
				}
			} else {
				atCommand = false
			}
			if last {
				break
			}
		}
	}
	return problems
}

// shellPrefix holds the words after which a command starts in a shell line.
var shellPrefix = map[string]bool{"do": true, "then": true, "else": true, "time": true, "exec": true, "sudo": true, "env": true, "$(": true, "(": true}

// startsProgram reports whether toks[i] runs mgrpo: `…/mgrpo` anywhere (go
// run ./cmd/mgrpo), or `mgrpo` first on the line (after VAR=value
// assignments) or after a shell separator or prefix. So the mode named
// mgrpo in `for m in mgrpo frozen-sub` is not taken for the program.
func startsProgram(toks []string, i int) bool {
	tok := strings.TrimLeft(toks[i], "($")
	if strings.HasSuffix(tok, "/mgrpo") {
		return true
	}
	if tok != "mgrpo" {
		return false
	}
	for k := i - 1; k >= 0; k-- {
		prev := toks[k]
		switch {
		case strings.Contains(prev, "=") && !strings.HasPrefix(prev, "-"):
			continue // an environment assignment
		case shellPrefix[prev], strings.HasSuffix(prev, ";"), prev == "|", prev == "||", prev == "&&", prev == "&":
			return true
		}
		return false
	}
	return true
}

// hasOwnFlags reports whether c has flags besides --help.
func hasOwnFlags(c *command) bool {
	for f := range c.flags {
		if f != "help" && f != "h" {
			return true
		}
	}
	return false
}

func TestDocCommandsAndFlagsExist(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{filepath.Join(root, "README.md")}
	// The examples' files, and the README of each example folder (an
	// example's code is checked by its own tests).
	for _, pattern := range []string{"docs/*.md", "examples/*", "examples/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range m {
			if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
				docs = append(docs, path)
			}
		}
	}
	spec := cliSpec(t, root)
	checked := 0
	for _, doc := range docs {
		rel, _ := filepath.Rel(root, doc)
		for _, u := range commandUses(t, doc, rel) {
			if !strings.Contains(u.text, "mgrpo") {
				continue
			}
			checked++
			for _, p := range checkLine(spec, u.text) {
				t.Errorf("%s:%d: %s (in %q)", u.file, u.line, p, strings.TrimSpace(u.text))
			}
		}
	}
	if checked == 0 {
		t.Fatal("no mgrpo command line found in the documentation")
	}
}

// TestCheckLine pins what the documentation check accepts and reports,
// against a fixed help text.
func TestCheckLine(t *testing.T) {
	rootFlags, rootSubs := parseHelp("GLOBAL OPTIONS:\n   --log-level value   level\n   --help, -h          show help\nCOMMANDS:\n   rollout  run\n   sim      serve\n   tool     call\n   help, h  help\n")
	if len(rootSubs) != 3 || !rootFlags["log-level"] || rootFlags["help"] || rootFlags["h"] {
		t.Fatalf("parseHelp: flags %v, subs %v", rootFlags, rootSubs)
	}
	spec := &command{flags: rootFlags, subs: map[string]*command{}}
	rollout, _ := parseHelp("OPTIONS:\n   --out DIR                                 output\n   --planner-url URL [ --planner-url URL ]   urls\n   --sim                                     sim (default: false)\n   --help, -h                                help\n")
	sim, _ := parseHelp("OPTIONS:\n   --llm ADDR  addr\n   --help, -h  help\n")
	tasks, _ := parseHelp("OPTIONS:\n   -n value    count\n   --help, -h  help\n")
	search, _ := parseHelp("OPTIONS:\n   --query value  q\n   --help, -h     help\n")
	tool, _ := parseHelp("OPTIONS:\n   --help, -h  help\n")
	spec.subs["rollout"] = &command{flags: rollout, subs: map[string]*command{}}
	spec.subs["sim"] = &command{flags: sim, subs: map[string]*command{"tasks": {flags: tasks, subs: map[string]*command{}}}}
	spec.subs["tool"] = &command{flags: tool, subs: map[string]*command{"search": {flags: search, subs: map[string]*command{}}}}
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"known flags", "go run ./cmd/mgrpo rollout --sim --out runs/demo", nil},
		{"global flag then command", "mgrpo --log-level debug rollout --out DIR", nil},
		{"usage line", "mgrpo [--log-level debug|info] COMMAND", nil},
		{"value taken by a flag", "mgrpo rollout --out --sim", nil},
		{"flag with =", "mgrpo rollout --out=runs/x", nil},
		{"short flag either way", "mgrpo sim tasks -n 4 --n 4", nil},
		{"subcommand", "mgrpo tool search --query q", nil},
		{"placeholder", "mgrpo rollout … --planner-url URL", nil},
		{"another program's flags", "vllm serve Qwen/Qwen3-8B --tool-call-parser hermes", nil},
		{"after a separator", "mgrpo sim --llm :0 & curl --silent x", nil},
		{"loop", "for m in a b; do go run ./cmd/mgrpo rollout --sim --out runs/$m; done --bogus", nil},
		{"unknown flag", "mgrpo rollout --planner-urls http://x", []string{"mgrpo rollout has no flag --planner-urls"}},
		{"a sim flag on rollout", "mgrpo rollout --llm :0", []string{"mgrpo rollout has no flag --llm"}},
		{"unknown command", "mgrpo serve --out x", []string{"mgrpo has no command serve", "mgrpo has no flag --out"}},
		{"unknown subcommand", "mgrpo tool fetch", []string{"mgrpo tool has no command fetch"}},
		{"a mode named mgrpo", "for m in mgrpo frozen-sub; do mgrpo rollout --sim; done", nil},
		{"prose", "runs mgrpo on vLLM", nil},
		{"environment first", "MGRPO_X=1 mgrpo rollout --llm :0", []string{"mgrpo rollout has no flag --llm"}},
		{"unknown global flag", "mgrpo --verbose rollout", []string{"mgrpo has no flag --verbose"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkLine(spec, tc.text)
			sort.Strings(got)
			want := append([]string(nil), tc.want...)
			sort.Strings(want)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("checkLine(%q) = %q, want %q", tc.text, got, want)
			}
		})
	}
}
