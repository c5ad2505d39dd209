package trainer

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidCheckpointName holds the split check to SkyRL's ID pattern.
func TestValidCheckpointName(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)
	for _, name := range []string{"", "a", "step-0001_w", strings.Repeat("x", 255), strings.Repeat("x", 256),
		"a/b", "a.b", "a\n", "ü", "-", strings.Repeat("é", 100)} {
		if got, want := validCheckpointName(name), pattern.MatchString(name); got != want {
			t.Errorf("validCheckpointName(%q) = %v, want %v", name, got, want)
		}
	}
}
