package main

import (
	"strings"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/run"
)

// defaultHelpWidth is the width help is wrapped to when stdout is not a
// terminal (a pipe, a file, a test).
const defaultHelpWidth = 80

// roleKeys are the endpoint roles whose keys repeat under each role: the
// key table shows each such key once, with the roles it applies to.
var roleKeys = []struct{ name, letter string }{{"planner", "p"}, {"executor", "e"}, {"judge", "j"}, {"reasoner", "r"}}

// keysOf selects the keys of a command's table.
type keysOf func(run.KeyDoc) bool

// layoutHelp gives the commands whose help lists the configuration keys
// (rollout, train, eval) their layout (issue 50 item 6): the grouped
// options first, each wrapped to width, then the YAML keys in one table,
// a key of the endpoint roles on one row with the roles it applies to.
// keys selects the keys a command's table shows.
func layoutHelp(cmd *cli.Command, width int, intro string, keys keysOf) {
	if width <= 0 {
		width = defaultHelpWidth
	}
	var b strings.Builder
	b.WriteString("NAME:\n" + escapeTemplate(wrapText(cmd.Name+" - "+cmd.Usage, 5, width, "   mgrpo ")))
	b.WriteString("\nUSAGE:\n   {{template \"usageTemplate\" .}}\n\nDESCRIPTION:\n" + escapeTemplate(wrapParagraphs(cmd.Description, 3, width)))
	if len(cmd.Subcommands) > 0 {
		b.WriteString("\nCOMMANDS:\n" + escapeTemplate(commandsText(cmd, width)))
	}
	b.WriteString("\nOPTIONS:\n")
	b.WriteString(escapeTemplate(optionsText(cmd, width)))
	b.WriteString("\nYAML KEYS (" + escapeTemplate(intro) + "):\n")
	b.WriteString(escapeTemplate(keyTable(run.KeyDocs(), keys, width)))
	cmd.CustomHelpTemplate = b.String()
}

// layoutHelps lays out the help of rollout, train and eval for stdout's
// width (defaultHelpWidth when it is not a terminal).
func layoutHelps(cmds []*cli.Command, width int) {
	notTrain := func(k run.KeyDoc) bool { return !strings.HasPrefix(k.Key, "train.") }
	for _, c := range cmds {
		switch c.Name {
		case "rollout":
			layoutHelp(c, width, "--config FILE; flags override them; train.*: see train", notTrain)
		case "train":
			layoutHelp(c, width, "--config FILE: the keys of `mgrpo rollout --help`, and train.*", func(k run.KeyDoc) bool { return !notTrain(k) })
		case "eval":
			// An eval has no steps: the agents' keys only, and its --out
			// says what eval writes.
			layoutHelp(c, width, "--config FILE: the agents' keys", func(k run.KeyDoc) bool {
				return notTrain(k) && k.Scope == run.ScopeAgent && k.Key != "out"
			})
		}
	}
}

// escapeTemplate makes text literal inside a text/template.
func escapeTemplate(s string) string {
	return strings.ReplaceAll(s, "{{", "{{\"{{\"}}")
}

// optionsText renders a command's flags by category: names, then their
// usage wrapped into a column (under the names when they are long).
func optionsText(cmd *cli.Command, width int) string {
	var b strings.Builder
	cats := cmd.VisibleFlagCategories()
	for i, cat := range cats {
		if i > 0 {
			b.WriteString("\n")
		}
		if cat.Name() != "" {
			b.WriteString("   " + cat.Name() + "\n\n")
		}
		var rows [][2]string
		col := 0
		for _, f := range cat.Flags() {
			names, usage, _ := strings.Cut(f.String(), "\t")
			rows = append(rows, [2]string{names, usage})
			if n := utf8.RuneCountInString(names); n <= 30 {
				col = max(col, n)
			}
		}
		for _, r := range rows {
			b.WriteString(row("   ", r[0], r[1], col, width))
		}
	}
	return b.String()
}

// row renders one "name  text" row: text wrapped at width in a column
// after name (padded to col), or on the next lines when name is longer.
func row(indent, name, text string, col, width int) string {
	start := len(indent) + col + 2
	if n := utf8.RuneCountInString(name); n > col {
		return indent + name + "\n" + wrapText(text, start, width, strings.Repeat(" ", start))
	}
	pad := strings.Repeat(" ", col-utf8.RuneCountInString(name)+2)
	return wrapText(text, start, width, indent+name+pad)
}

// wrapText wraps text into lines of at most width columns, the first
// starting with first, the others indented by indent columns. A line
// never starts with a word that begins with a dash (the word before it
// moves down too), so that urfave/cli's help readers, such as the docs'
// check, never read a wrapped flag name as an option line of its own.
func wrapText(text string, indent, width int, first string) string {
	avail := max(width-indent, 20)
	var lines [][]string
	var cur []string
	n := 0
	for _, w := range strings.Fields(text) {
		wl := utf8.RuneCountInString(w)
		if len(cur) > 0 && n+1+wl > avail {
			// Carry words down until the new line starts with one that is
			// not a flag (or only one word is left above).
			var carry []string
			for first := w; strings.HasPrefix(first, "-") && len(cur) > 1; first = carry[0] {
				carry, cur = append([]string{cur[len(cur)-1]}, carry...), cur[:len(cur)-1]
			}
			lines = append(lines, cur)
			cur, n = carry, 0
			for _, c := range carry {
				n += utf8.RuneCountInString(c) + 1
			}
		}
		if len(cur) > 0 && n > 0 {
			n++
		}
		cur = append(cur, w)
		n += wl
	}
	lines = append(lines, cur)
	var b strings.Builder
	for i, l := range lines {
		if i == 0 {
			b.WriteString(first)
		} else {
			b.WriteString(strings.Repeat(" ", indent))
		}
		b.WriteString(strings.Join(l, " ") + "\n")
	}
	return b.String()
}

// wrapParagraphs rewraps each paragraph of text (separated by blank
// lines), indented by indent spaces.
func wrapParagraphs(text string, indent, width int) string {
	var paras []string
	pad := strings.Repeat(" ", indent)
	for _, p := range strings.Split(text, "\n\n") {
		paras = append(paras, wrapText(p, indent, width, pad))
	}
	return strings.Join(paras, "\n")
}

// commandsText lists a command's subcommands, their usage wrapped.
func commandsText(cmd *cli.Command, width int) string {
	col := 0
	for _, c := range cmd.Subcommands {
		col = max(col, utf8.RuneCountInString(c.Name))
	}
	var b strings.Builder
	for _, c := range cmd.Subcommands {
		if !c.Hidden {
			b.WriteString(row("   ", c.Name, c.Usage, col, width))
		}
	}
	return b.String()
}

// keyRow is one row of the key table.
type keyRow struct {
	key, roles string
	docs       []run.KeyDoc
	byRole     []string
}

// keyTable renders the keys keep selects: one row per key, a key of the
// endpoint roles ("planner.model", "judge.model", …) once as
// "ROLE.model" with the letters of its roles, its defaults and flags per
// role where they differ.
func keyTable(all []run.KeyDoc, keep keysOf, width int) string {
	var rows []*keyRow
	byKey := map[string]*keyRow{}
	for _, k := range all {
		if !keep(k) {
			continue
		}
		key, role := k.Key, ""
		for _, r := range roleKeys {
			if rest, ok := strings.CutPrefix(k.Key, r.name+"."); ok {
				key, role = "ROLE."+rest, r.name
			}
		}
		kr := byKey[key]
		if kr == nil || role == "" {
			kr = &keyRow{key: key}
			rows = append(rows, kr)
			byKey[key] = kr
		}
		kr.docs = append(kr.docs, k)
		kr.byRole = append(kr.byRole, role)
	}
	col := 0
	for _, r := range rows {
		if r.byRole[0] != "" {
			for _, rk := range roleKeys {
				for _, have := range r.byRole {
					if have == rk.name {
						r.roles += rk.letter
					}
				}
			}
			r.key += " [" + r.roles + "]"
		}
		if n := utf8.RuneCountInString(r.key); n <= 24 {
			col = max(col, n)
		}
	}
	var b strings.Builder
	for _, r := range rows {
		if r.byRole[0] != "" {
			b.WriteString(wrapText("ROLE is planner [p], executor [e], judge [j] or reasoner [r]: a ROLE key applies to the roles in brackets.", 3, width, "   "))
			break
		}
	}
	for _, r := range rows {
		b.WriteString(row("   ", r.key, r.text(), col, width))
	}
	return b.String()
}

// text is a row's help: the doc (one field's, the same for every role),
// then its defaults and flags, per role where they differ.
func (r *keyRow) text() string {
	text := r.docs[0].Doc
	if d := r.perRole(func(k run.KeyDoc) string { return k.Default }); d != "" {
		text += " (default: " + d + ")"
	}
	if f := r.perRole(func(k run.KeyDoc) string {
		if k.Flag == "" {
			return ""
		}
		return "--" + k.Flag
	}); f != "" {
		text += " (" + f + ")"
	}
	return text
}

// perRole joins a value of the row's keys: once when every role has the
// same, else "p, e: X; j, r: Y" ("" when none has one).
func (r *keyRow) perRole(value func(run.KeyDoc) string) string {
	var order []string
	roles := map[string][]string{}
	for i, d := range r.docs {
		v := value(d)
		if _, ok := roles[v]; !ok {
			order = append(order, v)
		}
		roles[v] = append(roles[v], letterOf(r.byRole[i]))
	}
	if len(order) == 1 {
		return order[0]
	}
	var parts []string
	for _, v := range order {
		shown := v
		if shown == "" {
			shown = "none"
		}
		parts = append(parts, strings.Join(roles[v], ", ")+": "+shown)
	}
	return strings.Join(parts, "; ")
}

func letterOf(role string) string {
	for _, r := range roleKeys {
		if r.name == role {
			return r.letter
		}
	}
	return role
}
