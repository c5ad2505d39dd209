package main

import (
	"slices"
	"strings"
)

// dirFirstCommands take their run directory before their flags, as their
// documentation writes them (mgrpo rescore RUN_DIR --out NEW_DIR).
var dirFirstCommands = []string{"rescore", "replay"}

// moveDirFirst moves the directory given right after such a command to
// the end of the line, where urfave/cli reads arguments once the flags
// are parsed (it stops at the first argument that is not a flag).
func moveDirFirst(args []string) []string {
	for i := 1; i+1 < len(args); i++ {
		if a := args[i]; strings.HasPrefix(a, "-") {
			// A global flag's value follows it unless given with "=".
			if name := strings.TrimLeft(a, "-"); slices.Contains(globalFlags, name) {
				i++
			}
			continue
		}
		if !slices.Contains(dirFirstCommands, args[i]) || strings.HasPrefix(args[i+1], "-") || slices.Contains(args[i+1:], "--") {
			return args
		}
		out := append(slices.Clone(args[:i+1]), args[i+2:]...)
		return append(out, args[i+1])
	}
	return args
}
