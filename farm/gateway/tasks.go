package gateway

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// offer is the task a rollout hands to the agent, pushed to --agent-url or
// answered by GET /v1/tasks/next.
type offer struct {
	RolloutID string            `json:"rollout_id"`
	Task      offerTask         `json:"task"`
	Seed      int64             `json:"seed"`
	Deadline  string            `json:"deadline"`
	BaseURLs  map[string]string `json:"base_urls"`
	// Mode is how the task was delivered: "push" or "pull".
	Mode string `json:"mode"`
	// ResultURL and HeartbeatURL are a pulled task's routes for its result
	// and its heartbeats; they carry the rollout's capability, like the
	// base URLs. A pushed task has neither: its result is the push's answer.
	ResultURL    string `json:"result_url,omitempty"`
	HeartbeatURL string `json:"heartbeat_url,omitempty"`
	// LeaseSeconds is set on pulled tasks: how long the rollout stays the
	// agent's without a call, a heartbeat or its result.
	LeaseSeconds float64 `json:"lease_seconds,omitempty"`
}

// offerTask is the task without its gold answer.
type offerTask struct {
	ID       string          `json:"id"`
	Question string          `json:"question"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// taskResult is the agent's answer to a task.
type taskResult struct {
	Answer *string `json:"answer"`
	// FormatOK, when given, is the planner's r_format verdict; otherwise
	// the gateway judges the turns.
	FormatOK *bool `json:"format_ok"`
	// Reports are executor reports by trajectory name (the
	// X-Mgrpo-Trajectory header), judged for r_expert instead of the
	// trajectory's last assistant message.
	Reports map[string]string `json:"reports"`
	// Error is the agent's own failure: the rollout is an infra failure
	// with this message.
	Error string `json:"error"`
}

// maxResultBytes caps an agent's answer body.
const maxResultBytes = 16 << 20

// push posts s's offer to the agent service and delivers its answer.
func (g *Gateway) push(ctx context.Context, s *session) {
	body, err := json.Marshal(s.offer)
	if err != nil {
		s.finish(outcome{err: fmt.Errorf("encode the task: %w", err)})
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.cfg.AgentURL, bytes.NewReader(body))
	if err != nil {
		s.finish(outcome{err: fmt.Errorf("post the task: %w", err)})
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.cfg.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return // Run reports the deadline or the cancellation
		}
		s.finish(outcome{err: fmt.Errorf("post the task: %w", err)})
		return
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResultBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		s.finish(outcome{err: fmt.Errorf("read the agent's answer: %w", err)})
		return
	}
	if resp.StatusCode/100 != 2 {
		s.finish(outcome{err: fmt.Errorf("the agent service answered %s: %s", resp.Status, snippet(data))})
		return
	}
	res, err := decodeResult(data)
	s.finish(outcome{res: res, err: err})
}

// decodeResult reads an agent's answer; a body that is not one, or one
// that carries an error, is the agent's failure.
func decodeResult(data []byte) (taskResult, error) {
	var res taskResult
	if len(data) > maxResultBytes {
		return res, fmt.Errorf("the agent's answer is over %d bytes", maxResultBytes)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return res, fmt.Errorf("the agent's answer is not a JSON result object: %w (%s)", err, snippet(data))
	}
	if res.Error != "" {
		return res, fmt.Errorf("the agent failed: %s", res.Error)
	}
	if res.Answer == nil {
		return res, errors.New(`the agent's answer has no "answer" field`)
	}
	return res, nil
}

// snippet is the start of a body for an error message.
func snippet(b []byte) string {
	const n = 300
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// nextTask answers GET /v1/tasks/next: a waiting rollout's offer with its
// lease, or 204 after PollWait (or ?wait=SECONDS, at most PollWait).
func (g *Gateway) nextTask(w http.ResponseWriter, r *http.Request) {
	wait := g.cfg.PollWait
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v + "s")
		if err != nil || d < 0 {
			writeError(w, http.StatusBadRequest, "invalid_wait", fmt.Sprintf("wait %q: want a number of seconds", v))
			return
		}
		wait = min(wait, d)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case s := <-g.offers:
		s.renew()
		o := s.offer
		o.LeaseSeconds = g.cfg.Lease.Seconds()
		writeJSON(w, http.StatusOK, o)
	case <-timer.C:
		w.WriteHeader(http.StatusNoContent)
	case <-r.Context().Done():
	}
}

// postResult answers POST /v1/tasks/{rollout}/result.
func (g *Gateway) postResult(w http.ResponseWriter, r *http.Request) {
	s, ok := g.pulledSession(w, r.PathValue("rollout"), "result")
	if !ok {
		return
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		bodyError(w, err)
		return
	}
	var res taskResult
	if err := json.Unmarshal(data, &res); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_json", fmt.Sprintf("result body: %v", err))
		return
	}
	if res.Answer == nil && res.Error == "" {
		writeError(w, http.StatusBadRequest, "invalid_result", `result body: want "answer" (or "error")`)
		return
	}
	var o outcome
	o.res = res
	if res.Error != "" {
		o.err = fmt.Errorf("the agent failed: %s", res.Error)
	}
	if !s.finish(o) {
		writeError(w, http.StatusConflict, "rollout_finished", fmt.Sprintf("rollout %s already has a result", s.id))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "accepted"})
}

// heartbeat answers POST /v1/tasks/{rollout}/heartbeat: the lease is
// renewed.
func (g *Gateway) heartbeat(w http.ResponseWriter, r *http.Request) {
	s, ok := g.pulledSession(w, r.PathValue("rollout"), "heartbeat")
	if !ok {
		return
	}
	if !s.renew() {
		writeError(w, http.StatusConflict, "rollout_finished", fmt.Sprintf("rollout %s has finished", s.id))
		return
	}
	writeJSON(w, http.StatusOK, map[string]float64{"lease_seconds": g.cfg.Lease.Seconds()})
}

// pulledSession is session for the pull routes: a pushed rollout refuses
// them with 409 (its result is the push's answer, and it has no lease).
func (g *Gateway) pulledSession(w http.ResponseWriter, handle, route string) (*session, bool) {
	s, ok := g.session(w, handle)
	if ok && g.pushed() {
		writeError(w, http.StatusConflict, "wrong_mode",
			fmt.Sprintf("rollout %s was pushed to the agent service (mode push): it takes no %s on the pull routes; answer the push request instead", s.id, route))
		return nil, false
	}
	return s, ok
}

// session finds the rollout a capability handle (see capability.go) names,
// or answers 403 (a wrong or missing secret: nothing is touched), 404
// (unknown) or 409 (finished).
func (g *Gateway) session(w http.ResponseWriter, handle string) (*session, bool) {
	id, ok := g.checkCapability(w, handle)
	if !ok {
		return nil, false
	}
	s, finished := g.lookup(id)
	switch {
	case s != nil:
		return s, true
	case finished:
		writeError(w, http.StatusConflict, "rollout_finished", fmt.Sprintf("rollout %s has finished", id))
	default:
		writeError(w, http.StatusNotFound, "rollout_not_found", fmt.Sprintf("no rollout %s", id))
	}
	return nil, false
}

// authorized checks the bearer token in constant time: in the
// Authorization header, or in x-api-key, where the Anthropic SDK sends
// its key.
func (g *Gateway) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		got, ok = r.Header.Get("X-Api-Key"), r.Header.Get("X-Api-Key") != ""
	}
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(g.cfg.Token)) == 1
}

// bodyError answers a request whose body could not be read.
func bodyError(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("request body over %d bytes", tooBig.Limit))
		return
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The body did not arrive within the server's body timeout: the
		// client was too slow, which is a timeout, not a malformed request.
		writeError(w, http.StatusRequestTimeout, "request_timeout", fmt.Sprintf("the request body did not arrive in time: %v", err))
		return
	}
	writeError(w, http.StatusBadRequest, "unreadable_body", fmt.Sprintf("read the request body: %v", err))
}
