package farm

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/mgrpo/mgrpo/llm"
)

// DefaultAutoRollouts is the rollouts in flight of `concurrency: auto`
// without a cap of its own (auto:CAP).
const DefaultAutoRollouts = 256

// auto is how an adaptive Concurrency is written.
const auto = "auto"

// Concurrency is a run's concurrency setting: a fixed number of rollouts in flight
// (64), or auto. Under auto (auto:CAP) at most CAP rollouts are in flight
// (DefaultAutoRollouts without one) and each model role's pool lets as many
// requests reach its engines as their own metrics say they can take: the
// limit grows while they have free slots and nothing waits, and backs off
// when requests queue, the KV cache nears full or they preempt, never above
// CAP (llm.Controller; docs/concurrency.md). Rollouts above the limit wait
// in the farm, where they cost no KV cache.
type Concurrency struct {
	n    int
	auto bool
}

// ConcurrencyOf returns a fixed concurrency of n rollouts in flight.
func ConcurrencyOf(n int) Concurrency { return Concurrency{n: n} }

// AutoConcurrency returns auto with at most capacity rollouts in flight.
func AutoConcurrency(capacity int) Concurrency { return Concurrency{n: capacity, auto: true} }

// Rollouts returns the rollouts in flight: the fixed number, or auto's cap.
func (c Concurrency) Rollouts() int { return c.n }

// Auto reports whether the request limits adapt.
func (c Concurrency) Auto() bool { return c.auto }

// PoolAuto returns the adaptive limit of a role's pool under auto, nil for
// a fixed concurrency.
func (c Concurrency) PoolAuto() *llm.AutoConfig {
	if !c.auto {
		return nil
	}
	return &llm.AutoConfig{Cap: int64(c.n)}
}

// UnmarshalText parses a number, auto or auto:CAP.
func (c *Concurrency) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	low := strings.ToLower(s)
	switch {
	case low == auto:
		*c = AutoConcurrency(DefaultAutoRollouts)
		return nil
	case strings.HasPrefix(low, auto+":"):
		n, err := strconv.Atoi(strings.TrimSpace(s[len(auto)+1:]))
		if err != nil || n < 1 {
			return fmt.Errorf("concurrency %q: the cap of auto:CAP must be a whole number of at least 1 (auto:512), or write auto (a cap of %d)", s, DefaultAutoRollouts)
		}
		*c = AutoConcurrency(n)
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("concurrency %q: want a number of rollouts in flight (64), auto (adapt to the engines' metrics, at most %d in flight) or auto:CAP (auto:512)", s, DefaultAutoRollouts)
	}
	*c = ConcurrencyOf(n)
	return nil
}

// String returns the number, or auto:CAP.
func (c Concurrency) String() string {
	if c.auto {
		return auto + ":" + strconv.Itoa(c.n)
	}
	return strconv.Itoa(c.n)
}

// MarshalText writes String.
func (c Concurrency) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// MarshalJSON writes a fixed concurrency as the number it always was, and
// auto as "auto:CAP".
func (c Concurrency) MarshalJSON() ([]byte, error) {
	if c.auto {
		return json.Marshal(c.String())
	}
	return json.Marshal(c.n)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Concurrency) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return c.UnmarshalText([]byte(s))
	}
	return c.UnmarshalText(b)
}

// LogValue logs a fixed concurrency as a number, auto as auto:CAP.
func (c Concurrency) LogValue() slog.Value {
	if c.auto {
		return slog.StringValue(c.String())
	}
	return slog.IntValue(c.n)
}

// Set parses a flag's value (flag.Value).
func (c *Concurrency) Set(s string) error { return c.UnmarshalText([]byte(s)) }
