package redis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/store"
)

// DefaultPrefix starts every key of a store whose URL names no prefix.
const DefaultPrefix = "mgrpo:"

// group is the consumer group of every queue stream.
const group = "workers"

// Store is a store.Store on one Redis database.
type Store struct {
	client *goredis.Client
	prefix string
	// url is the URL the store was opened with, password redacted, for
	// errors.
	url       string
	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// Open connects to the Redis server rawURL names (see the package doc for
// the URL's form) and pings it. The error of a server that does not answer
// names the URL with its password redacted.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	opt, prefix, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	safe := redact.URL(rawURL)
	c := goredis.NewClient(opt)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("open redis store %s: %w", safe, redactErr(err, opt.Password))
	}
	return &Store{client: c, prefix: prefix, url: safe}, nil
}

// parseURL turns a store URL into go-redis options and the key prefix.
func parseURL(rawURL string) (*goredis.Options, string, error) {
	safe := redact.URL(rawURL)
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error repeats the whole URL, password included: keep only
		// its reason.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, "", fmt.Errorf("open redis store %s: %w", safe, err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, "", fmt.Errorf("open redis store %s: scheme %q is neither redis nor rediss", safe, u.Scheme)
	}
	prefix := DefaultPrefix
	q := u.Query()
	if q.Has("prefix") {
		prefix = q.Get("prefix")
		q.Del("prefix")
		u.RawQuery = q.Encode()
	}
	opt, err := goredis.ParseURL(u.String())
	if err != nil {
		pw, _ := u.User.Password()
		return nil, "", fmt.Errorf("open redis store %s: %w", safe, redactErr(err, pw))
	}
	// Deadlines of the callers' contexts bound every command.
	opt.ContextTimeoutEnabled = true
	return opt, prefix, nil
}

// redactedError is an error whose text has a secret replaced; it unwraps
// to the original, so errors.Is still sees the cause.
type redactedError struct {
	err    error
	secret string
}

func (e redactedError) Error() string { return redact.Secrets(e.err.Error(), e.secret) }
func (e redactedError) Unwrap() error { return e.err }

// redactErr hides secret in err's text (go-redis's errors do not hold the
// password, but a server's or a proxy's might).
func redactErr(err error, secret string) error {
	if secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return redactedError{err, secret}
}

// Close closes the store's connections. It is idempotent; other methods
// fail after it.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.client.Close() })
	return s.closeErr
}

// runKeys are the keys of one run (see the package doc).
type runKeys struct {
	base                                                          string
	run, steps, stats, versions, queue, tasks, leases, done, dead string
	lock                                                          string
}

func (s *Store) keys(run string) runKeys {
	b := s.prefix + "{" + url.PathEscape(run) + "}:"
	return runKeys{
		base: b, run: b + "run", steps: b + "steps", stats: b + "stats", versions: b + "versions",
		queue: b + "queue", tasks: b + "tasks", leases: b + "leases", done: b + "done", dead: b + "dead",
		lock: b + "lock",
	}
}

// results is the key of a step's results.
func (k runKeys) results(step int) string { return k.base + "results:" + strconv.Itoa(step) }

// cacheKey is the key of a tool cache entry.
func (s *Store) cacheKey(key string) string { return s.prefix + "cache:" + key }

// The error codes the scripts reply with, mapped to the store's errors.
var codes = []struct {
	prefix string
	err    error
}{
	{"WRONGTYPE", store.ErrCorrupt},
	// A queue stream without its consumer group lost who holds what.
	{"NOGROUP", store.ErrQueueLost},
	{"QUEUELOST", store.ErrQueueLost},
	{"CORRUPT", store.ErrCorrupt},
	{"NOTFOUND", store.ErrNotFound},
	{"LEASELOST", store.ErrLeaseLost},
	{"CONFLICT", store.ErrConflict},
	// Redis's own replies that retrying does not cure, and those it
	// gives while it cannot answer for now (see store.Transient).
	{"OOM ", store.ErrUnusable},
	{"READONLY ", store.ErrUnusable},
	{"NOPERM ", store.ErrUnusable},
	{"MISCONF ", store.ErrUnusable},
	{"BUSY ", store.ErrUnavailable},
	{"LOADING ", store.ErrUnavailable},
	{"MASTERDOWN ", store.ErrUnavailable},
	{"TRYAGAIN ", store.ErrUnavailable},
}

// storeError is a Redis error reply that means one of the store's errors:
// its text is the reply's, and it unwraps to the store's error.
type storeError struct {
	msg string
	err error
}

func (e *storeError) Error() string { return e.msg + " (" + e.err.Error() + ")" }
func (e *storeError) Unwrap() error { return e.err }

// mapErr turns the error replies that mean a store error into one.
func mapErr(err error) error {
	if errors.Is(err, goredis.ErrClosed) {
		return fmt.Errorf("%w: %w", store.ErrClosed, err)
	}
	var re goredis.Error
	if err == nil || !errors.As(err, &re) {
		return err
	}
	msg := re.Error()
	for _, c := range codes {
		if strings.HasPrefix(msg, c.prefix) {
			return &storeError{msg: strings.TrimSpace(strings.TrimPrefix(msg, c.prefix)), err: c.err}
		}
	}
	return err
}

// keyErr is mapErr for a command on key: an ErrCorrupt names the key
// (Redis's own WRONGTYPE reply does not).
func keyErr(key string, err error) error {
	err = mapErr(err)
	if errors.Is(err, store.ErrCorrupt) && !strings.Contains(err.Error(), key) {
		return fmt.Errorf("key %s: %w", key, err)
	}
	return err
}

// corrupt returns an ErrCorrupt for a value of key that does not parse.
func corrupt(key string, err error) error {
	return fmt.Errorf("key %s: %v: %w", key, err, store.ErrCorrupt)
}

// millis returns d in whole milliseconds, rounded up, at least 1.
func millis(d time.Duration) int64 {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return max(int64(ms), 1)
}

// quietLogger drops go-redis's own log lines: they go to the process's
// stderr past any logger the program configured (one per failed dial
// while Redis is down). The store reports every failure in its errors,
// which the farm logs as it retries.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func init() { goredis.SetLogger(quietLogger{}) }
