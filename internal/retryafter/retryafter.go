// Package retryafter reads HTTP Retry-After headers. It is the one parser
// of them: internal/httpretry reads every answer's Retry-After through it,
// for the StatusError and the Policy all the project's clients share.
package retryafter

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Parse reads a Retry-After value, either delay-seconds or an HTTP date,
// relative to now. It returns false when v is empty or does not parse (a
// negative or fractional number included); a date in the past yields 0,
// true. Seconds beyond what a Duration holds are clamped.
func Parse(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, int64(math.MaxInt64/time.Second))) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
