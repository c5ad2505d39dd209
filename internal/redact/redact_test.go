package redact

import (
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"user info and key parameter", "https://u:p@x.example/s?api_key=SECRET&q=1", "https://x.example/s?api_key=REDACTED&q=1"},
		{"token parameter", "http://h:8000/v1?access_token=abc", "http://h:8000/v1?access_token=REDACTED"},
		{"signature parameter", "https://b.example/o?X-Amz-Signature=abc&x=2", "https://b.example/o?X-Amz-Signature=REDACTED&x=2"},
		{"plain query kept", "http://web.sim/site/a?page=2", "http://web.sim/site/a?page=2"},
		{"no query", "http://alice:s3cret@127.0.0.1:9/v1", "http://127.0.0.1:9/v1"},
		{"unparsable with user info", "http://alice:s3 cret@\x7f/", "[REDACTED]@\x7f/"},
		{"unparsable query", "http://h/p?a=%zz&key=s", "http://h/p?REDACTED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := URL(c.in); got != c.want {
				t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestSecrets(t *testing.T) {
	if got, want := Secrets("key sk-abcdef in text", "sk-abcdef"), "key [REDACTED] in text"; got != want {
		t.Errorf("Secrets = %q, want %q", got, want)
	}
	if got := Secrets("a sim b", "sim", ""); got != "a sim b" {
		t.Errorf("short secrets replaced: %q", got)
	}
}

func FuzzURLDropsUserInfo(f *testing.F) {
	f.Add("https://u:p@x.example/s?api_key=SECRET&q=1", "p")
	f.Add("http://alice:hunter22@h/", "hunter22")
	f.Fuzz(func(t *testing.T, host, password string) {
		// The host is kept to characters that never get escaped, so the
		// password cannot reappear by escaping.
		if len(password) < 6 || strings.ContainsAny(password, "@/?#%:") || strings.Contains(host, password) ||
			strings.Trim(host, "abcdefghijklmnopqrstuvwxyz0123456789.-/") != "" {
			return
		}
		raw := "http://user:" + password + "@" + host
		if got := URL(raw); strings.Contains(got, password) {
			t.Errorf("URL(%q) = %q keeps the password", raw, got)
		}
	})
}
