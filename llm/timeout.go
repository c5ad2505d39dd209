package llm

import (
	"fmt"
	"strings"
	"time"
)

// autoTimeout is how a Timeout left to the client is written.
const autoTimeout = "auto"

// Timeout is a model call timeout as a configuration holds it: a Go
// duration ("90s", "5m") or auto, the zero value, which leaves it to the
// client's derivation from the call's max_tokens (see
// RetryPolicy.Timeouts). It implements flag.Value, so a flag can set it.
type Timeout struct {
	d   time.Duration
	set bool
}

// TimeoutOf returns a Timeout of exactly d.
func TimeoutOf(d time.Duration) Timeout { return Timeout{d: d, set: true} }

// Value returns the duration and whether one was given (false: auto).
func (t Timeout) Value() (time.Duration, bool) { return t.d, t.set }

// Retry returns the duration for RetryPolicy, where zero is auto.
func (t Timeout) Retry() time.Duration {
	if !t.set {
		return 0
	}
	return t.d
}

// UnmarshalText parses auto or a Go duration.
func (t *Timeout) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if strings.EqualFold(s, autoTimeout) {
		*t = Timeout{}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("timeout %q: want auto or a duration such as 90s or 5m", b)
	}
	*t = TimeoutOf(d)
	return nil
}

// MarshalText writes auto or the duration.
func (t Timeout) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// String returns auto or the duration as Go writes it.
func (t Timeout) String() string {
	if !t.set {
		return autoTimeout
	}
	return t.d.String()
}

// Set parses a flag's value (flag.Value).
func (t *Timeout) Set(s string) error { return t.UnmarshalText([]byte(s)) }
