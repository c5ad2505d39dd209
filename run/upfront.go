package run

import (
	"errors"
	"fmt"
	"strings"
)

// upfront joins the problems a run finds before its first rollout (the
// tasks against the batch size, the tools' configuration, the endpoints'
// preflight and probes) into one error, so that a user learns every one of
// them from a single attempt instead of one per attempt. The error wraps
// ErrConfig when any problem is a configuration error (exit 2); otherwise
// it is what it was (an endpoint down may come back: exit 1). Nil problems
// are skipped; a single problem is returned as it is.
func upfront(errs ...error) error {
	var given, kept []error
	var lines []string
	for _, err := range errs {
		if err == nil {
			continue
		}
		given = append(given, err)
		if u, ok := err.(upfrontError); ok {
			kept, lines = append(kept, u.errs...), append(lines, u.problems...)
			continue
		}
		kept, lines = append(kept, err), append(lines, problemLines(err)...)
	}
	switch len(given) {
	case 0:
		return nil
	case 1:
		return given[0]
	}
	return upfrontError{problems: lines, errs: kept}
}

// problemLines splits an error's text into its problems: each line that
// does not start with a space is one (the joined errors of a validation or
// a preflight), indented lines continue the one before. The prefixes that
// introduce a list ("configuration error:", "before starting:") go.
func problemLines(err error) []string {
	text := err.Error()
	for _, prefix := range []string{ErrConfig.Error() + ":\n", ErrConfig.Error() + ": ", "before starting:\n"} {
		text = strings.TrimPrefix(text, prefix)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if len(out) > 0 && (line == "" || line[0] == ' ' || line[0] == '\t') {
			out[len(out)-1] += "\n  " + strings.TrimSpace(line)
			continue
		}
		out = append(out, line)
	}
	return out
}

// upfrontError is the problems of upfront, listed in its text; errors.Is
// sees each of them (and ErrConfig when one is a configuration error).
type upfrontError struct {
	problems []string
	errs     []error
}

func (e upfrontError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "before starting, %d problems (fix them all, then run again):", len(e.problems))
	for _, p := range e.problems {
		b.WriteString("\n- " + p)
	}
	return b.String()
}

func (e upfrontError) Unwrap() []error {
	for _, err := range e.errs {
		if errors.Is(err, ErrConfig) {
			return append(e.errs[:len(e.errs):len(e.errs)], ErrConfig)
		}
	}
	return e.errs
}
