package tinker

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"strconv"
	"testing"
	"time"
)

func fakeJWT(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(payload)) + ".sig"
}

// TestJWTExpiry reads exp as the SDK does (unverified, base64url, padded
// or not) and reports an unreadable one.
func TestJWTExpiry(t *testing.T) {
	enc := base64.URLEncoding.EncodeToString // padded
	padded := enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(`{"exp":1800000001}`)) + ".sig"
	for _, tc := range []struct {
		tok  string
		want int64
		ok   bool
	}{
		{fakeJWT(`{"exp":1800000000,"sub":"x"}`), 1800000000, true},
		{fakeJWT(`{"exp":1800000000.5}`), 1800000000, true},
		{padded, 1800000001, true},
		{fakeJWT(`{"sub":"x"}`), 0, false},
		{"tml-not-a-jwt", 0, false},
		{"a.!!!.c", 0, false},
	} {
		got, ok := jwtExpiry(tc.tok)
		if ok != tc.ok || (ok && got.Unix() != tc.want) {
			t.Errorf("jwtExpiry(%q) = %v, %v; want %d, %v", tc.tok, got, ok, tc.want, tc.ok)
		}
	}
}

// TestJWTSourceFallsBack: a failed refresh within the margin keeps the
// token held until it expires, then the failure is the caller's; a token
// without a readable exp is traded again after jwtUnknownExpiry.
func TestJWTSourceFallsBack(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	fail := false
	trades := 0
	j := &jwtSource{now: func() time.Time { return now }, log: slog.New(slog.DiscardHandler)}
	j.fetch = func(context.Context) (string, error) {
		if fail {
			return "", errors.New("auth/token down")
		}
		trades++
		return fakeJWT(`{"exp":` + strconv.FormatInt(now.Unix()+600, 10) + `}`), nil
	}
	ctx := context.Background()
	first, err := j.get(ctx)
	if err != nil || trades != 1 {
		t.Fatalf("first get: %v after %d trades", err, trades)
	}
	now = now.Add(6 * time.Minute) // inside the 5-minute margin
	fail = true
	if tok, err := j.get(ctx); err != nil || tok != first {
		t.Errorf("get with auth/token down inside the margin: %v; want the held token", err)
	}
	now = now.Add(5 * time.Minute) // past expiry
	if _, err := j.get(ctx); err == nil {
		t.Error("get with auth/token down past expiry succeeded")
	}
	fail = false
	if _, err := j.get(ctx); err != nil || trades != 2 {
		t.Errorf("get after auth/token came back: %v after %d trades", err, trades)
	}

	j2 := &jwtSource{now: func() time.Time { return now }, log: slog.New(slog.DiscardHandler)}
	n := 0
	j2.fetch = func(context.Context) (string, error) { n++; return "opaque-token", nil }
	_, _ = j2.get(ctx)
	_, _ = j2.get(ctx)
	now = now.Add(jwtUnknownExpiry)
	_, _ = j2.get(ctx)
	if n != 2 {
		t.Errorf("an opaque token was traded %d times over %v, want 2", n, jwtUnknownExpiry)
	}
}
