package gateway

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
)

// Modes of task delivery, as an offer names them.
const (
	ModePush = "push"
	ModePull = "pull"
)

// A rollout's routes are named by a capability: its id and a secret of its
// own, "ID.SECRET". The id appears in logs and step files; the secret only in
// the URLs handed to the agent, so knowing a rollout's id (or guessing one)
// is not enough to write into it. A call whose secret is wrong or missing is
// refused with 403 before anything of the rollout is read or changed.

// capability is the path segment that names rollout id to its agent.
func capability(id, secret string) string { return id + "." + secret }

// checkCapability splits a handle into the rollout id and checks its secret
// in constant time. Unknown ids pass (the caller answers 404); a handle
// without a secret, or with a wrong one, is answered 403 here.
func (g *Gateway) checkCapability(w http.ResponseWriter, handle string) (string, bool) {
	id, secret, hasSecret := strings.Cut(handle, ".")
	g.mu.Lock()
	want, known := g.secrets[id]
	g.mu.Unlock()
	if !known {
		return id, true
	}
	if !hasSecret || subtle.ConstantTimeCompare([]byte(secret), []byte(want)) != 1 {
		what := "a wrong secret"
		if !hasSecret {
			what = "no secret"
		}
		writeError(w, http.StatusForbidden, "wrong_rollout_secret",
			fmt.Sprintf("rollout %s: the URL carries %s; use the base URLs (and, when pulling, result_url and heartbeat_url) of the task offer as given", id, what))
		return "", false
	}
	return id, true
}

// pushed reports whether tasks are pushed to an agent service.
func (g *Gateway) pushed() bool { return g.cfg.AgentURL != "" }
