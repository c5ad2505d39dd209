package trainer

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// jwtAuth is the server's JWT auth mode (Config.JWTLifetime): the tokens
// auth/token issues are HS256 JWTs signed with a key drawn when the server
// starts, so that a token of another server, or one a client altered, is
// refused as a real service refuses it.
type jwtAuth struct {
	key []byte
}

func newJWTAuth() *jwtAuth {
	k := make([]byte, 32)
	// crypto/rand.Read never fails (it panics on a broken system source).
	_, _ = rand.Read(k)
	return &jwtAuth{key: k}
}

// jwtHeader is every token's header, base64url without padding.
var jwtHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))

// jwtClaims are what a token says: who, when issued, when it expires
// (Unix seconds, as JWTs count), and a serial so no two are alike.
type jwtClaims struct {
	Sub string `json:"sub"`
	Iat int64  `json:"iat"`
	Exp int64  `json:"exp"`
	Jti int64  `json:"jti"`
}

func (a *jwtAuth) sign(c jwtClaims) string {
	p, _ := json.Marshal(c) // a struct of strings and ints always marshals
	unsigned := jwtHeader + "." + base64.RawURLEncoding.EncodeToString(p)
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(unsigned))
	return unsigned + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verify reports why tok is not a valid token of this server at now ("":
// it is).
func (a *jwtAuth) verify(tok string, now time.Time) string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0] != jwtHeader {
		return "Invalid JWT: not a token of this server"
	}
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(parts[0] + "." + parts[1]))
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, m.Sum(nil)) {
		return "Invalid JWT: bad signature"
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	var c jwtClaims
	if err != nil || json.Unmarshal(raw, &c) != nil {
		return "Invalid JWT: unreadable claims"
	}
	if now.Unix() >= c.Exp {
		return "Invalid JWT: expired"
	}
	return ""
}

// jwtExempt are the routes served without a JWT in JWT mode: the health
// check, and the two the SDK sends with its API key before it has one.
var jwtExempt = map[string]bool{"healthz": true, "client/config": true, "auth/token": true}

// checkJWT answers 401 and returns false for a request of a route that
// wants a JWT and came without a valid one (in X-API-Key, where the SDK
// sends it). The refusal is counted.
func (s *Server) checkJWT(w http.ResponseWriter, r *http.Request, route string) bool {
	if s.jwt == nil || jwtExempt[route] {
		return true
	}
	why := s.jwt.verify(r.Header.Get("X-API-Key"), s.cfg.Now())
	if why == "" {
		return true
	}
	s.mu.Lock()
	s.jwtRefused++
	s.mu.Unlock()
	writeError(w, errorf(http.StatusUnauthorized, "%s", why))
	return false
}

// authToken trades the API key (checked before, with every request's) for
// a JWT that expires after Config.JWTLifetime: the SDK's POST auth/token,
// answered {"jwt": …}. Without JWT mode the route is 404, as on a service
// that does not offer it.
func (s *Server) authToken(w http.ResponseWriter) {
	if s.jwt == nil {
		writeError(w, errorf(http.StatusNotFound, "no route /api/v1/auth/token (JWT auth is off)"))
		return
	}
	now := s.cfg.Now()
	s.mu.Lock()
	s.jwtIssued++
	n := int64(s.jwtIssued)
	s.mu.Unlock()
	// Whole seconds, as the exp claim counts; at least one.
	life := max(int64(s.cfg.JWTLifetime/time.Second), 1)
	tok := s.jwt.sign(jwtClaims{Sub: "sim-trainer", Iat: now.Unix(), Exp: now.Unix() + life, Jti: n})
	writeJSON(w, http.StatusOK, map[string]string{"jwt": tok})
}

// JWTCounts returns how many tokens auth/token issued and how many
// requests were refused for want of a valid one, in JWT mode.
func (s *Server) JWTCounts() (issued, refused int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jwtIssued, s.jwtRefused
}
