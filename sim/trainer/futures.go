package trainer

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// future is the result of a queued request. Futures are kept until
// Config.KeptSteps later steps of their model have saved, so a replayed
// request finds its original after a client restart.
type future struct {
	id      string
	modelID string
	done    chan struct{}
	// result is the JSON answered once done: the route's result or the
	// SDK's RequestFailedResponse {error, category}.
	result json.RawMessage
}

// Error categories of a failed future (the SDK's RequestErrorCategory).
const (
	categoryUser   = "user"
	categoryServer = "server"
)

func (s *Server) newFuture(modelID string) *future {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextFuture++
	f := &future{id: "future_" + strconv.Itoa(s.nextFuture), modelID: modelID, done: make(chan struct{})}
	s.futures[f.id] = f
	return f
}

// issued reports whether id is a future this server handed out (and let
// go, when it is not in s.futures). s.mu must be held.
func (s *Server) issued(id string) bool {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "future_"))
	return err == nil && strings.HasPrefix(id, "future_") && n >= 1 && n <= s.nextFuture
}

// resolve sets f's result; v is encoded as JSON.
func (f *future) resolve(v any) { f.resolveRaw(encodeResult(v)) }

// resolveRaw sets f's result to the JSON b.
func (f *future) resolveRaw(b json.RawMessage) {
	f.result = b
	close(f.done)
}

// encodeResult is v as a future's JSON result.
func encodeResult(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": "encode result: " + err.Error(), "category": categoryServer})
	}
	return b
}

func (f *future) fail(category, msg string) {
	f.resolve(map[string]string{"error": msg, "category": category})
}

// polling returns the number of long polls being held.
func (s *Server) polling() int64 { return s.polls.Load() }

// retrieveFuture long-polls one future: its result when done within
// PollTimeout, else 408 or try_again (Config.PollAnswer).
func (s *Server) retrieveFuture(w http.ResponseWriter, r *http.Request, body []byte) {
	var req retrieveRequest
	if e := decode("retrieve_future", body, &req); e != nil {
		writeError(w, e)
		return
	}
	id, err := req.requestID()
	if err != nil {
		writeError(w, errorf(http.StatusBadRequest, "retrieve_future: %v", err))
		return
	}
	s.mu.Lock()
	f, issued := s.futures[id], s.issued(id)
	s.mu.Unlock()
	if f == nil && issued {
		writeError(w, errorf(http.StatusGone, "future %q expired: its request ran, and the results of a model's last %d steps are kept", id, s.cfg.KeptSteps))
		return
	}
	if f == nil {
		writeError(w, errorf(http.StatusNotFound, "future %q not found", id))
		return
	}
	s.polls.Add(1)
	defer s.polls.Add(-1)
	t := time.NewTimer(s.cfg.PollTimeout)
	defer t.Stop()
	select {
	case <-f.done:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(f.result)
	case <-t.C:
		if s.cfg.PollAnswer == PollTryAgain {
			writeJSON(w, http.StatusOK, map[string]string{"type": "try_again", "request_id": id, "queue_state": "active"})
			return
		}
		writeError(w, errorf(http.StatusRequestTimeout, "timeout waiting for the result of %s", id))
	case <-r.Context().Done():
	case <-s.ctx.Done():
		writeError(w, errorf(http.StatusServiceUnavailable, "server shutting down"))
	}
}
