package main

import (
	"slices"
	"strings"
)

// globalFlags are the app's flags that take a value; users also give them
// after the command (`mgrpo rollout --log-level warn`).
var globalFlags = []string{"log-level", "log-format"}

// hoistGlobalFlags moves the global flags given after the command to
// before it, where urfave/cli reads them: args[0] is the program, and
// nothing after a "--" is moved.
func hoistGlobalFlags(args []string) []string {
	if len(args) < 2 {
		return args
	}
	var hoisted, rest []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || !slices.Contains(globalFlags, name) {
			rest = append(rest, a)
			continue
		}
		hoisted = append(hoisted, a)
		if !hasValue && i+1 < len(args) {
			i++
			hoisted = append(hoisted, args[i])
		}
	}
	out := append([]string{args[0]}, hoisted...)
	return append(out, rest...)
}
