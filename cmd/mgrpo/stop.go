package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// servers are the commands that serve until interrupted: Ctrl-C is how
// they end, so it exits 0 and there is nothing to resume.
// A worker is one too: its coordinator owns the run.
var servers = map[string]bool{"sim": true, "view": true, "corpus serve": true, "worker": true}

// commandOf returns the command path of a command line ("rollout",
// "corpus serve"), or "".
func commandOf(app *cli.App, args []string) string {
	cmds := app.Commands
	var path []string
	flags := flagNames(app.Flags)
	for i := 1; i < len(args) && cmds != nil; i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if flags[name] && !hasValue {
				i++
			}
			continue
		}
		c := findCommand(cmds, a)
		if c == nil {
			break
		}
		path, cmds, flags = append(path, c.Name), c.Subcommands, flagNames(c.Flags)
	}
	return strings.Join(path, " ")
}

// stopHint is what the first interrupt's log line says will happen.
func stopHint(command string) string {
	switch {
	case command == "worker":
		return "in-flight rollouts get their grace period to finish (the coordinator hands out the rest); send the signal again to stop at once"
	case servers[command]:
		return "closing the servers; send the signal again to stop at once"
	case command == "rollout" || command == "train" || command == "eval":
		return "in-flight work gets its grace period to finish; send the signal again to stop at once; continue the run later with the same command and --resume"
	}
	return "send the signal again to stop at once"
}

// exitCode is the exit status of a finished command line: 2 for a bad
// command line or configuration, 130 (as a shell reports SIGINT) for a run
// stopped by an interrupt, even a clean stop, so scripts tell it from a
// finished run; 0 for a server stopped by one.
func exitCode(err error, interrupted bool, command string) int {
	switch {
	case interrupted && servers[command]:
		if err != nil {
			return 1
		}
		return 0
	case interrupted:
		return exitInterrupted
	case err == nil:
		return 0
	case isConfigError(err):
		return 2
	}
	return 1
}
