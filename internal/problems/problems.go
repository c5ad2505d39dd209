// Package problems joins the problems a command finds before it starts
// into one error that lists each on its own line, so that a user learns
// every one from a single attempt instead of one per attempt.
package problems

import (
	"fmt"
	"strings"
)

// Join returns one error listing the problems of errs, nil ones skipped: a
// single error is returned as it is; several become "before starting, N
// problems …" with one "- " line each. An error whose text holds several
// lines (a validation's or a preflight's joined errors) counts as one
// problem per line that does not start with a space; indented lines
// continue the problem before them. strip are the prefixes that introduce
// such a list ("configuration error:\n"), dropped from each text. A Join
// of Joins lists their problems flat. errors.Is and errors.As see every
// error joined.
func Join(strip []string, errs ...error) error {
	var given, kept []error
	var lines []string
	for _, err := range errs {
		if err == nil {
			continue
		}
		given = append(given, err)
		if l, ok := err.(listError); ok {
			kept, lines = append(kept, l.errs...), append(lines, l.problems...)
			continue
		}
		kept, lines = append(kept, err), append(lines, split(err.Error(), strip)...)
	}
	switch len(given) {
	case 0:
		return nil
	case 1:
		return given[0]
	}
	return listError{problems: lines, errs: kept}
}

// split cuts an error's text into its problems.
func split(text string, strip []string) []string {
	for _, prefix := range strip {
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

// listError is the problems of Join, listed in its text.
type listError struct {
	problems []string
	errs     []error
}

func (e listError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "before starting, %d problems (fix them all, then run again):", len(e.problems))
	for _, p := range e.problems {
		b.WriteString("\n- " + p)
	}
	return b.String()
}

func (e listError) Unwrap() []error { return e.errs }
