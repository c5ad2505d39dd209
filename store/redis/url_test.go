package redis

import (
	"strings"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	cases := []struct {
		name, url            string
		addr, user, password string
		db                   int
		prefix               string
		tls, skipVerify      bool
		dialTimeout          time.Duration
	}{
		{name: "plain", url: "redis://127.0.0.1:6379/0", addr: "127.0.0.1:6379", prefix: DefaultPrefix},
		{name: "ACL user, password, db and prefix", url: "redis://worker:pa55@redis.internal:6380/3?prefix=exp7:",
			addr: "redis.internal:6380", user: "worker", password: "pa55", db: 3, prefix: "exp7:"},
		{name: "TLS with a password only", url: "rediss://:pa55@cache.example:6380/1", addr: "cache.example:6380",
			password: "pa55", db: 1, prefix: DefaultPrefix, tls: true},
		{name: "TLS without verification", url: "rediss://cache.example/0?skip_verify=true&prefix=a:",
			addr: "cache.example:6379", prefix: "a:", tls: true, skipVerify: true},
		{name: "empty prefix and a go-redis option", url: "redis://h:1/0?prefix=&dial_timeout=2s",
			addr: "h:1", prefix: "", dialTimeout: 2 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opt, prefix, err := parseURL(c.url)
			if err != nil {
				t.Fatal(err)
			}
			if opt.Addr != c.addr || opt.Username != c.user || opt.Password != c.password || opt.DB != c.db || prefix != c.prefix {
				t.Errorf("got addr %q user %q password %q db %d prefix %q; want %q %q %q %d %q",
					opt.Addr, opt.Username, opt.Password, opt.DB, prefix, c.addr, c.user, c.password, c.db, c.prefix)
			}
			if got := opt.TLSConfig != nil; got != c.tls {
				t.Errorf("TLS %v, want %v", got, c.tls)
			} else if c.tls && (opt.TLSConfig.ServerName != strings.Split(c.addr, ":")[0] || opt.TLSConfig.InsecureSkipVerify != c.skipVerify) {
				t.Errorf("TLS server name %q skip verify %v; want %q, %v", opt.TLSConfig.ServerName,
					opt.TLSConfig.InsecureSkipVerify, strings.Split(c.addr, ":")[0], c.skipVerify)
			}
			if c.dialTimeout != 0 && opt.DialTimeout != c.dialTimeout {
				t.Errorf("dial timeout %v, want %v", opt.DialTimeout, c.dialTimeout)
			}
			if !opt.ContextTimeoutEnabled {
				t.Error("context deadlines are not passed to the connections")
			}
		})
	}
}

func TestParseURLErrorsHideThePassword(t *testing.T) {
	const password = "hunter2-secret"
	for _, raw := range []string{
		"http://u:" + password + "@h/0",
		"redis://u:" + password + "@h/0?bogus=1",
		"redis://u:" + password + "@h/notadb",
		"redis://u:" + password + "@h:port/0",
		"redis://u:" + password + "@h/0?dial_timeout=soon",
	} {
		_, _, err := parseURL(raw)
		if err == nil {
			t.Errorf("parseURL(%q) succeeded, want an error", raw)
			continue
		}
		if strings.Contains(err.Error(), password) {
			t.Errorf("parseURL(%q) error %q holds the password", raw, err)
		}
	}
}

func TestKeysEscapeTheRun(t *testing.T) {
	s := &Store{prefix: "p:"}
	k := s.keys("a}b{c/d%")
	if want := "p:{a%7Db%7Bc%2Fd%25}:queue"; k.queue != want {
		t.Errorf("queue key %q, want %q", k.queue, want)
	}
	if got, want := k.results(12), "p:{a%7Db%7Bc%2Fd%25}:results:12"; got != want {
		t.Errorf("results key %q, want %q", got, want)
	}
	if got, want := s.cacheKey("search:x"), "p:cache:search:x"; got != want {
		t.Errorf("cache key %q, want %q", got, want)
	}
}
