package yamlstrict

import (
	"fmt"
	"time"
)

// Duration is a time.Duration written as Go duration text ("30s", "10m")
// in YAML (and JSON), for configuration files read by people.
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: want e.g. 30s or 10m", b)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as Go duration text.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }
