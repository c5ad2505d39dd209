// Package redact keeps secrets out of log lines, errors and outputs. Every
// package of the project that prints a URL or an error that may hold a key
// goes through it, so there is one rule for what counts as a secret.
package redact

import (
	"net/url"
	"strings"
)

// Marker replaces a secret's text.
const Marker = "[REDACTED]"

// minSecret is the shortest secret Secrets replaces: shorter strings (an
// empty key, "sim") occur in ordinary text and would mangle it.
const minSecret = 4

// Secrets replaces every occurrence of each secret of at least four bytes in
// s with Marker.
func Secrets(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= minSecret {
			s = strings.ReplaceAll(s, sec, Marker)
		}
	}
	return s
}

// credentialWords are the parts of query parameter names that mark a
// credential (api_key, access_token, X-Amz-Signature, password, …).
var credentialWords = []string{"key", "token", "secret", "password", "passwd", "auth", "sig", "credential", "session"}

// URL returns raw without user info and with the values of query parameters
// whose names suggest credentials replaced by "REDACTED"; other parameters,
// the path and the fragment are kept, since they say which page or endpoint
// was meant. A string that does not parse as a URL loses everything up to
// its last '@' (where user info would end), and is otherwise kept.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			return Marker + raw[i:]
		}
		return raw
	}
	u.User = nil
	if u.RawQuery == "" {
		return u.String()
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		// A query that does not parse cannot be checked name by name.
		u.RawQuery = "REDACTED"
		return u.String()
	}
	changed := false
	for name := range q {
		if isCredential(name) {
			q.Set(name, "REDACTED")
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// isCredential reports whether a query parameter name suggests a secret.
func isCredential(name string) bool {
	n := strings.ToLower(name)
	for _, w := range credentialWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
