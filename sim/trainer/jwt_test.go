package trainer

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// send posts body to route with cred in X-API-Key and returns the status
// and the decoded answer.
func send(t *testing.T, url, route, cred string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/"+route, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if cred != "" {
		req.Header.Set("X-API-Key", cred)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", route, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestJWTMode: client/config says JWT auth, auth/token trades the key for
// a JWT, the other routes take the JWT and refuse the key, an altered or
// expired token, and a wrong key gets no token.
func TestJWTMode(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	ts := newTestServer(t, Config{APIKey: "tml-right", JWTLifetime: time.Minute, Now: clk.now, SessionTTL: time.Hour})
	code, cc := send(t, ts.url, "client/config", "tml-right", map[string]string{"sdk_version": "0.31.0"})
	if code != 200 || cc["pjwt_auth_enabled"] != true {
		t.Fatalf("client/config: %d %v; want 200 with pjwt_auth_enabled true", code, cc)
	}
	if code, _ := send(t, ts.url, "auth/token", "tml-wrong", map[string]any{}); code != 401 {
		t.Errorf("auth/token with a wrong key: %d, want 401", code)
	}
	code, tok := send(t, ts.url, "auth/token", "tml-right", map[string]any{})
	jwt, _ := tok["jwt"].(string)
	if code != 200 || !strings.HasPrefix(jwt, "eyJ") || strings.Count(jwt, ".") != 2 {
		t.Fatalf("auth/token: %d %v; want 200 with a JWT", code, tok)
	}
	if code, _ := send(t, ts.url, "create_session", "tml-right", map[string]any{}); code != 401 {
		t.Errorf("create_session with the API key in JWT mode: %d, want 401", code)
	}
	if code, _ := send(t, ts.url, "create_session", jwt[:len(jwt)-2]+"xx", map[string]any{}); code != 401 {
		t.Errorf("create_session with an altered JWT: %d, want 401", code)
	}
	if code, ans := send(t, ts.url, "create_session", jwt, map[string]any{}); code != 200 {
		t.Errorf("create_session with the JWT: %d %v, want 200", code, ans)
	}
	clk.add(time.Minute)
	code, ans := send(t, ts.url, "create_session", jwt, map[string]any{})
	if code != 401 || !strings.Contains(ans["detail"].(string), "expired") {
		t.Errorf("create_session with an expired JWT: %d %v, want 401 expired", code, ans)
	}
	if issued, refused := ts.JWTCounts(); issued != 1 || refused != 3 {
		t.Errorf("JWTCounts = %d issued, %d refused; want 1 and 3", issued, refused)
	}
}

// TestJWTOffByDefault: without JWTLifetime, client/config says no JWT and
// auth/token is 404.
func TestJWTOffByDefault(t *testing.T) {
	ts := newTestServer(t, Config{})
	if _, cc := send(t, ts.url, "client/config", "", map[string]string{}); cc["pjwt_auth_enabled"] != false {
		t.Errorf("client/config pjwt_auth_enabled = %v, want false", cc["pjwt_auth_enabled"])
	}
	if code, _ := send(t, ts.url, "auth/token", "", map[string]any{}); code != 404 {
		t.Errorf("auth/token without JWT mode: %d, want 404", code)
	}
}
