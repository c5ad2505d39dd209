package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/urfave/cli/v2"
)

// newLogger builds the process logger from --log-level and --log-format.
// Text to a terminal is for a person (consoleHandler: one format with the
// bar and the step table, no line repeating a table row); text to a file
// or a pipe stays slog's key=value lines, and json is structured.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "text":
		if con, ok := w.(*console); ok && con.terminal {
			return slog.New(newConsoleHandler(con, lvl)), nil
		}
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
}

// loggerOf returns the logger that the app's Before hook configured.
func loggerOf(c *cli.Context) *slog.Logger {
	if l, ok := c.App.Metadata["logger"].(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// consoleOf returns the console (stderr) the app's log and progress share.
func consoleOf(c *cli.Context) *console {
	if con, ok := c.App.Metadata["console"].(*console); ok {
		return con
	}
	return newConsole(io.Discard)
}
