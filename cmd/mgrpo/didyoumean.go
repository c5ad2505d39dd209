package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mgrpo/mgrpo/internal/didyoumean"
	"github.com/urfave/cli/v2"
)

// didYouMean formats a suggestion as the end of a message.
func didYouMean(name string, candidates []string, prefix string) string {
	if s := didyoumean.Suggest(name, candidates); s != "" {
		return fmt.Sprintf(" (did you mean %s%s?)", prefix, s)
	}
	return ""
}

// flagNames returns every name and alias of flags, and whether each takes
// a value.
func flagNames(flags []cli.Flag) map[string]bool {
	out := map[string]bool{"help": false, "h": false}
	for _, f := range flags {
		takes := true
		if tv, ok := f.(interface{ TakesValue() bool }); ok {
			takes = tv.TakesValue()
		}
		for _, n := range f.Names() {
			out[n] = takes
		}
	}
	return out
}

// unknownFlags walks a command line (args[0] the program) down the command
// tree and returns one line per flag the command it is given to does not
// have, each with the closest flag it has. Go's flag package stops at the
// first unknown flag; this reports all of them at once.
func unknownFlags(app *cli.App, args []string) []string {
	flags := flagNames(app.Flags)
	cmds, path := app.Commands, "mgrpo"
	var out []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if c := findCommand(cmds, a); c != nil {
				flags, cmds, path = flagNames(c.Flags), c.Subcommands, path+" "+c.Name
			} else {
				cmds = nil // a positional argument
			}
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takes, ok := flags[name]
		if !ok {
			names := make([]string, 0, len(flags))
			for n := range flags {
				if len(n) > 1 {
					names = append(names, n)
				}
			}
			slices.Sort(names)
			out = append(out, fmt.Sprintf("%s has no flag --%s%s", path, name, didYouMean(name, names, "--")))
			continue
		}
		if takes && !hasValue {
			i++
		}
	}
	return out
}

// findCommand returns the command named (or aliased) name, or nil.
func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// commandNames returns the names of cmds.
func commandNames(cmds []*cli.Command) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, c.Name)
	}
	return out
}

// unknownCommand is the Action of the app and of each group of
// subcommands without one: an argument that names no command is a usage
// error (exit 2) with the closest command; none shows the help.
func unknownCommand(path string, cmds func() []*cli.Command, help func(*cli.Context) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		if !c.Args().Present() {
			return help(c)
		}
		name := c.Args().First()
		return usagef("%s has no command %q%s; `%s --help` lists them", path, name, didYouMean(name, commandNames(cmds()), ""), path)
	}
}
