// Command mgrpo is the rollout farm's command line: it turns flags into calls
// of the library packages and does nothing else.
//
// Exit status: 0 on success, 1 when a command fails, 2 when the command line
// or configuration is invalid (nothing was started).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// usageError marks a bad command line or configuration: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError with a formatted message.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal starts a graceful stop; restoring the default
	// handling lets a second one end the process at once.
	go func() {
		<-ctx.Done()
		stop()
	}()
	os.Exit(run(ctx, os.Args, os.Stdout, os.Stderr))
}

// run executes the command line and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	if err := app.RunContext(ctx, args); err != nil {
		fmt.Fprintf(stderr, "mgrpo: %v\n", err)
		if isConfigError(err) {
			return 2
		}
		return 1
	}
	return 0
}

// asUsageError marks every error urfave/cli reports about the command line
// itself (an unknown flag, a value that does not parse, a missing required
// flag) as a usage error, so it exits 2 like a bad configuration.
func asUsageError(_ *cli.Context, err error, _ bool) error { return usageError{err} }

// markUsageErrors sets asUsageError on every command and subcommand.
func markUsageErrors(cmds []*cli.Command) {
	for _, c := range cmds {
		c.OnUsageError = asUsageError
		markUsageErrors(c.Subcommands)
	}
}

// newApp builds the command tree. Output goes to stdout and stderr so tests
// can capture it.
func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:    "mgrpo",
		Usage:   "rollout farm for multi-agent deep-research RL with M-GRPO",
		Version: version,
		Writer:  stdout,
		// Errors are printed once, by run.
		ErrWriter:      io.Discard,
		ExitErrHandler: func(*cli.Context, error) {},
		Metadata:       map[string]any{"stderr": stderr},
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "text or json"},
		},
		Before: func(c *cli.Context) error {
			logger, err := newLogger(stderr, c.String("log-level"), c.String("log-format"))
			if err != nil {
				return usageError{err}
			}
			c.App.Metadata["logger"] = logger
			return nil
		},
		Commands:     []*cli.Command{rolloutCommand(), simCommand(), toolCommand(), corpusCommand(), evalCommand()},
		OnUsageError: asUsageError,
	}
	markUsageErrors(app.Commands)
	return app
}
