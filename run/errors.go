package run

import (
	"errors"

	upfrontlist "github.com/mgrpo/mgrpo/internal/problems"
)

// ErrConfig marks a configuration error: the run did not start and nothing
// was done. Commands exit with status 2 on it.
var ErrConfig = errors.New("configuration error")

// invalidError is a configuration error whose message is its cause's alone:
// errors.Is(err, ErrConfig) holds, and the user reads only what was wrong.
type invalidError struct{ err error }

func (e invalidError) Error() string   { return e.err.Error() }
func (e invalidError) Unwrap() []error { return []error{e.err, ErrConfig} }

// invalid marks err as a configuration error without prefixing its text.
func invalid(err error) error { return invalidError{err} }

// upfront joins the problems a run finds before its first rollout (tasks,
// tools, endpoints) into one message (see problems.Join): it wraps
// ErrConfig when one of them does.
func upfront(errs ...error) error {
	return upfrontlist.Join([]string{ErrConfig.Error() + ":\n", ErrConfig.Error() + ": ", "before starting:\n"}, errs...)
}
