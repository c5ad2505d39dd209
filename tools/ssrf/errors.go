package ssrf

import (
	"errors"
	"fmt"
)

// ErrRefused is matched (errors.Is) by every refusal of the guard.
var ErrRefused = errors.New("refused by SSRF guard")

// RefusedError says why the guard refused a URL or a connection. Host is the
// host as written (when known), Addr the IP address checked (when known).
type RefusedError struct {
	Host   string
	Addr   string
	Reason string
}

// Error implements error.
func (e *RefusedError) Error() string {
	switch {
	case e.Host != "" && e.Addr != "" && e.Host != e.Addr:
		return fmt.Sprintf("refused by SSRF guard: %s resolves to %s, a %s", e.Host, e.Addr, e.Reason)
	case e.Addr != "":
		return fmt.Sprintf("refused by SSRF guard: %s is a %s", e.Addr, e.Reason)
	case e.Host != "":
		return fmt.Sprintf("refused by SSRF guard: host %q: %s", e.Host, e.Reason)
	default:
		return "refused by SSRF guard: " + e.Reason
	}
}

// Is reports whether target is ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }
