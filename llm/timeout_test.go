package llm

import (
	"testing"
	"time"
)

// TestTimeoutText: auto (the zero value, any case) leaves the timeout to
// the client's derivation (Retry 0); a duration is exact; anything else is
// an error naming what is wanted.
func TestTimeoutText(t *testing.T) {
	for _, tc := range []struct {
		in    string
		retry time.Duration
		set   bool
	}{{"auto", 0, false}, {" AUTO ", 0, false}, {"90s", 90 * time.Second, true}} {
		var to Timeout
		if err := to.Set(tc.in); err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if _, set := to.Value(); to.Retry() != tc.retry || set != tc.set {
			t.Errorf("%q: Retry %v set %v, want %v %v", tc.in, to.Retry(), set, tc.retry, tc.set)
		}
	}
	var to Timeout
	if err := to.Set("soon"); err == nil || to.String() != "auto" {
		t.Errorf("Set(soon) = %v (%v), want an error and auto kept", err, to)
	}
}
