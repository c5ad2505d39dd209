// Package backends opens a store.Store by URL, choosing the backend by the
// URL's scheme. It is the one place that knows every backend, so that
// store and its users import none of them.
package backends

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/redis"
	"github.com/mgrpo/mgrpo/store/sqlite"
)

// Open opens the store rawURL names:
//
//	sqlite://PATH   store/sqlite in the file PATH: sqlite://runs/x/store.db is
//	                relative to the working directory, sqlite:///abs/path.db
//	                absolute; PATH is percent-decoded ('?' and '#' are %3F, %23).
//	                Parameters: busy_timeout and poll (Go durations), for
//	                sqlite.WithBusyTimeout and sqlite.WithPollInterval.
//	redis://[user:password@]host:port/db[?prefix=P], rediss://… (TLS)
//	                store/redis; keys under the prefix (default "mgrpo:").
//
// An unknown scheme or a malformed URL is an error naming what is wrong,
// with the URL's credentials redacted.
func Open(ctx context.Context, rawURL string) (store.Store, error) {
	scheme, rest, err := splitScheme(rawURL)
	if err != nil {
		return nil, fmt.Errorf("unsupported store %q (known: sqlite, redis, rediss): %w", redact.URL(rawURL), err)
	}
	// One case per backend. Each returns a nil interface on error, not a
	// typed nil pointer.
	switch scheme {
	case "sqlite":
		t, err := parseSQLite(rest)
		if err != nil {
			return nil, fmt.Errorf("store %q: %w", redact.URL(rawURL), err)
		}
		s, err := sqlite.Open(ctx, t.path, t.options()...)
		if err != nil {
			return nil, err
		}
		return s, nil
	case "redis", "rediss":
		s, err := redis.Open(ctx, rawURL)
		if err != nil {
			return nil, err
		}
		return s, nil
	default:
		return nil, fmt.Errorf("unsupported store %q (known: sqlite, redis, rediss)", redact.URL(rawURL))
	}
}

// splitScheme returns the lower-cased scheme of raw (RFC 3986: a letter,
// then letters, digits, '+', '-' and '.') and what follows its ':'.
func splitScheme(raw string) (scheme, rest string, err error) {
	i := strings.IndexByte(raw, ':')
	if i <= 0 {
		return "", "", errors.New("no scheme")
	}
	for j, c := range raw[:i] {
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (j == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", "", errors.New("no scheme")
		}
	}
	return strings.ToLower(raw[:i]), raw[i+1:], nil
}

// sqliteTarget is what a sqlite:// URL says.
type sqliteTarget struct {
	path        string
	busyTimeout time.Duration // 0: the default
	poll        time.Duration // 0: the default
}

func (t sqliteTarget) options() []sqlite.Option {
	var opts []sqlite.Option
	if t.busyTimeout != 0 {
		opts = append(opts, sqlite.WithBusyTimeout(t.busyTimeout))
	}
	if t.poll != 0 {
		opts = append(opts, sqlite.WithPollInterval(t.poll))
	}
	return opts
}

// sqliteParams are the parameters a sqlite:// URL takes.
var sqliteParams = map[string]func(*sqliteTarget, time.Duration){
	"busy_timeout": func(t *sqliteTarget, d time.Duration) { t.busyTimeout = d },
	"poll":         func(t *sqliteTarget, d time.Duration) { t.poll = d },
}

// parseSQLite reads what follows "sqlite:". The path is taken as it is
// written rather than through url.Parse, which would read its first
// segment as a host (and refuse "sqlite://my runs/x.db").
func parseSQLite(rest string) (sqliteTarget, error) {
	var t sqliteTarget
	after, ok := strings.CutPrefix(rest, "//")
	if !ok {
		return t, errors.New("want sqlite://PATH (sqlite://runs/x/store.db, or sqlite:///abs/path.db)")
	}
	if _, frag, ok := strings.Cut(after, "#"); ok {
		return t, fmt.Errorf("a fragment (#%s) in a sqlite URL (write '#' in the path as %%23)", frag)
	}
	rawPath, rawQuery, _ := strings.Cut(after, "?")
	path, err := url.PathUnescape(rawPath)
	if err != nil {
		return t, fmt.Errorf("path %q: %w", rawPath, err)
	}
	if path == "" {
		return t, errors.New("no file path after sqlite://")
	}
	t.path = path
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return t, fmt.Errorf("parameters %q: %w", rawQuery, err)
	}
	for name, vals := range q {
		set, ok := sqliteParams[name]
		if !ok {
			return t, fmt.Errorf("unknown parameter %q (known: %s)", name, strings.Join(paramNames(), ", "))
		}
		if len(vals) != 1 {
			return t, fmt.Errorf("parameter %s given %d times", name, len(vals))
		}
		d, err := time.ParseDuration(vals[0])
		if err != nil || d <= 0 {
			return t, fmt.Errorf("parameter %s=%q: want a positive duration such as 5s", name, vals[0])
		}
		set(&t, d)
	}
	return t, nil
}

func paramNames() []string {
	names := make([]string, 0, len(sqliteParams))
	for n := range sqliteParams {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// SQLitePath returns the file of a sqlite:// store URL and true; "" and
// false for a URL of another scheme or one that does not parse.
func SQLitePath(rawURL string) (string, bool) {
	scheme, rest, err := splitScheme(rawURL)
	if err != nil || scheme != "sqlite" {
		return "", false
	}
	t, err := parseSQLite(rest)
	if err != nil {
		return "", false
	}
	return t.path, true
}

// WithPassword returns a redis:// or rediss:// URL with password in it
// when it has none of its own (a password given apart, so that it stays
// out of flags and files); other URLs, a URL with a password and an empty
// password are returned as they are.
func WithPassword(rawURL, password string) string {
	scheme, _, err := splitScheme(rawURL)
	if password == "" || err != nil || scheme != "redis" && scheme != "rediss" {
		return rawURL
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	if _, has := u.User.Password(); has {
		return rawURL
	}
	user := ""
	if u.User != nil {
		user = u.User.Username()
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}
