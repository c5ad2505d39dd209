package tinker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The SDK's JWT auth mode (its lib/_jwt_auth.py, 0.31.0): when
// client/config says pjwt_auth_enabled, the API key is traded at POST
// auth/token ({} → {"jwt": …}) for a short-lived JWT, and every later
// request carries the JWT where the key went (X-API-Key). The SDK
// refreshes it in the background five minutes before its exp claim, and on
// demand when a request finds a minute or less left; a failed refresh
// keeps the token it has; a 401 ("Invalid JWT") is not retried.
const (
	// jwtRefreshAhead is the SDK's background margin before expiry.
	jwtRefreshAhead = 5 * time.Minute
	// jwtUnknownExpiry is how long a token whose exp claim cannot be read
	// is used before it is traded again (the SDK's retry delay when it
	// cannot parse one).
	jwtUnknownExpiry = time.Minute
)

// tokenRoutes are sent with the API key even in JWT mode: client/config
// comes before the mode is known, auth/token is the trade itself.
var tokenRoutes = map[string]bool{"client/config": true, "auth/token": true}

// jwtSource holds the JWT of a client in JWT mode. The bridge has no
// background task for it: each request asks get, which trades the key
// again once the token is within its refresh margin (the SDK's five
// minutes, or half the token's life for a token of under ten minutes), so
// a token never goes out stale however long the bridge idled. It is safe
// for concurrent use; one trade runs at a time and the others wait for it.
type jwtSource struct {
	now   func() time.Time
	fetch func(context.Context) (string, error)
	log   *slog.Logger

	mu     sync.Mutex
	exp    time.Time // the token's expiry (zero: none yet)
	margin time.Duration
	// token is the current JWT; it is atomic so that redaction reads it
	// without waiting for a trade in progress.
	token atomic.Pointer[string]
	// trades counts the tokens fetched, for the record.
	trades atomic.Int64
}

// current is the token held ("" before the first trade).
func (j *jwtSource) current() string {
	if p := j.token.Load(); p != nil {
		return *p
	}
	return ""
}

// get returns a token good for a request sent now, trading the key again
// when the one held is within its margin. When that trade fails and the
// held token has not expired, it is used (the SDK does the same, and the
// server says so if it must).
func (j *jwtSource) get(ctx context.Context) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := j.now()
	tok := j.current()
	if tok != "" && now.Before(j.exp.Add(-j.margin)) {
		return tok, nil
	}
	if err := j.refreshLocked(ctx, now); err != nil {
		if tok != "" && now.Before(j.exp) {
			j.log.Warn("tinker JWT refresh failed; the current token is used until it expires", "expires", j.exp, "err", err)
			return tok, nil
		}
		return "", err
	}
	return j.current(), nil
}

// refresh trades the key for a token now, whatever the one held.
func (j *jwtSource) refresh(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.refreshLocked(ctx, j.now())
}

func (j *jwtSource) refreshLocked(ctx context.Context, now time.Time) error {
	tok, err := j.fetch(ctx)
	if err != nil {
		return err
	}
	exp, ok := jwtExpiry(tok)
	if !ok {
		exp = now.Add(jwtUnknownExpiry)
	}
	j.token.Store(&tok)
	j.exp = exp
	j.margin = min(jwtRefreshAhead, exp.Sub(now)/2)
	j.trades.Add(1)
	return nil
}

// jwtExpiry reads a JWT's exp claim (Unix seconds) without checking its
// signature: the token came from the server it goes back to, which checks
// it; the client only needs to know when to trade again.
func jwtExpiry(tok string) (time.Time, bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var c struct {
		Exp *float64 `json:"exp"`
	}
	if json.Unmarshal(raw, &c) != nil || c.Exp == nil {
		return time.Time{}, false
	}
	sec := int64(*c.Exp)
	return time.Unix(sec, int64((*c.Exp-float64(sec))*1e9)), true
}

// authToken is auth/token's answer (the SDK's AuthTokenResponse).
type authToken struct {
	JWT string `json:"jwt"`
}

// errNoJWT is an auth/token answer without a token.
var errNoJWT = errors.New("auth/token answered no jwt")

// startJWT puts the client in JWT mode and makes the first trade, as the
// SDK does before it opens a session: a key the server refuses stops
// Start here.
func (t *Trainer) startJWT(ctx context.Context) error {
	c := t.c
	j := &jwtSource{now: t.cfg.Now, log: t.log}
	if j.now == nil {
		j.now = time.Now
	}
	j.fetch = func(ctx context.Context) (string, error) {
		var ans authToken
		if err := c.call(ctx, http.MethodPost, "auth/token", []byte("{}"), &ans); err != nil {
			return "", err
		}
		if ans.JWT == "" {
			return "", errNoJWT
		}
		return ans.JWT, nil
	}
	c.jwt = j
	if err := j.refresh(ctx); err != nil {
		return fmt.Errorf("tinker %s: JWT auth (client/config says pjwt_auth_enabled): %w", t.where, err)
	}
	t.log.Info("tinker JWT auth: the API key was traded for a JWT at auth/token; requests carry the JWT", "expires", j.exp)
	return nil
}
