// Command mgrpo is the rollout farm's command line: it turns flags into calls
// of the library packages and does nothing else.
//
// Exit status: 0 on success, 1 when a command fails, 2 when the command line
// or configuration is invalid (nothing was started).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
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

// exitInterrupted is the exit status after a second interrupt, as a shell
// reports a process ended by SIGINT (128 + 2).
const exitInterrupted = 130

// ownProcess is set by main: the command line owns the process, so its
// logger becomes the default one (tests run many command lines in one
// process and leave the default alone).
var ownProcess bool

func main() {
	ownProcess = true
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	stop := startProfile(os.Getenv, os.Stderr)
	code := runMain(context.Background(), os.Args, os.Stdout, os.Stderr, signals, func(code int) { stop(); os.Exit(code) })
	stop()
	os.Exit(code)
}

// runMain executes the command line and returns the exit status. The first
// value on signals cancels the command's context (a run lets in-flight
// rollouts finish within its grace period); a second one calls exit at once.
// Both are logged. Tests pass a nil channel.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer, signals <-chan os.Signal, exit func(int)) int {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var interrupted atomic.Bool
	done := make(chan struct{})
	defer close(done)
	app := newApp(stdout, stderr)
	before := app.Before
	app.Before = func(c *cli.Context) error {
		if err := before(c); err != nil {
			return err
		}
		if signals != nil {
			go watchSignals(ctx, done, signals, func(cause error) { interrupted.Store(true); cancel(cause) }, loggerOf(c), exit, stopHint(commandOf(c.App, args)))
		}
		return nil
	}
	args = moveDirFirst(hoistGlobalFlags(args))
	app.Metadata["args"] = args
	err := app.RunContext(ctx, args)
	if err != nil && !(interrupted.Load() && errors.Is(err, context.Canceled)) {
		fmt.Fprintf(stderr, "mgrpo: %v\n", err)
	}
	return exitCode(err, interrupted.Load(), commandOf(app, args))
}

// watchSignals turns the first signal into a graceful stop and the second
// into an immediate exit. Step files are written to a temporary name and
// renamed, so an exit at any moment leaves only complete steps on disk. It
// returns when the command is done (done is closed).
func watchSignals(ctx context.Context, done <-chan struct{}, signals <-chan os.Signal, cancel context.CancelCauseFunc, logger *slog.Logger, exit func(int), hint string) {
	select {
	case <-done:
		return
	case <-ctx.Done():
		// Cancelled from outside (a test, a caller's deadline): a signal
		// now can only mean "at once".
	case s := <-signals:
		logger.Warn("stopping: "+hint, "signal", s.String())
		cancel(fmt.Errorf("%s signal received", s))
	}
	select {
	case <-done:
	case s := <-signals:
		logger.Warn("stopping at once: in-flight rollouts are abandoned; steps already written are complete", "signal", s.String())
		exit(exitInterrupted)
	}
}

// asUsageError marks every error urfave/cli reports about the command line
// itself (an unknown flag, a value that does not parse, a missing required
// flag) as a usage error, so it exits 2 like a bad configuration. An
// unknown flag is reported with every other unknown flag of the command
// line, each with the closest flag the command has.
func asUsageError(c *cli.Context, err error, _ bool) error {
	if strings.HasPrefix(err.Error(), "flag provided but not defined") && c != nil && c.App != nil {
		if args, ok := c.App.Metadata["args"].([]string); ok {
			if bad := unknownFlags(c.App, args); len(bad) > 0 {
				return usageError{errors.New(strings.Join(bad, "\n  "))}
			}
		}
	}
	return usageError{err}
}

// markUsageErrors sets asUsageError on every command and subcommand, and
// makes an unknown subcommand of a group a usage error.
func markUsageErrors(cmds []*cli.Command, path string) {
	for _, c := range cmds {
		c.OnUsageError = asUsageError
		if len(c.Subcommands) > 0 {
			sub, p := c, path+" "+c.Name
			if c.Action == nil {
				c.Action = unknownCommand(p, func() []*cli.Command { return sub.Subcommands }, func(ctx *cli.Context) error { return cli.ShowSubcommandHelp(ctx) })
			} else {
				own := c.Action
				check := unknownCommand(p, func() []*cli.Command { return sub.Subcommands }, own)
				c.Action = func(ctx *cli.Context) error {
					if a := ctx.Args().First(); a != "" && !strings.HasPrefix(a, "-") {
						return check(ctx)
					}
					return own(ctx)
				}
			}
		}
		markUsageErrors(c.Subcommands, path+" "+c.Name)
	}
}

// newApp builds the command tree. Output goes to stdout and stderr so tests
// can capture it.
func newApp(stdout, stderr io.Writer) *cli.App {
	con := newConsole(stderr)
	app := &cli.App{
		Name:    "mgrpo",
		Usage:   "rollout farm for multi-agent deep-research RL with M-GRPO",
		Version: versionString(),
		Writer:  stdout,
		// Errors are printed once, by run.
		ErrWriter:      io.Discard,
		ExitErrHandler: func(*cli.Context, error) {},
		Metadata:       map[string]any{"console": con},
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "text or json"},
		},
		Before: func(c *cli.Context) error {
			logger, err := newLogger(con, c.String("log-level"), c.String("log-format"))
			if err != nil {
				return usageError{err}
			}
			c.App.Metadata["logger"] = logger
			if ownProcess {
				// Libraries that log through slog's default logger or the
				// standard log package (the Tinker bridge when no logger
				// reaches it) honour --log-level and --log-format too.
				slog.SetDefault(logger)
			}
			return nil
		},
		Commands:     []*cli.Command{rolloutCommand(), trainCommand(), workerCommand(), evalCommand(), reportCommand(), rescoreCommand(), replayCommand(), viewCommand(), simCommand(), toolCommand(), corpusCommand()},
		OnUsageError: asUsageError,
	}
	app.Action = unknownCommand("mgrpo", func() []*cli.Command { return app.Commands }, cli.ShowAppHelp)
	markUsageErrors(app.Commands, "mgrpo")
	layoutHelps(app.Commands, newConsole(stdout).width())
	return app
}
