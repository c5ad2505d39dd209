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
	// route is the request's; a forward_backward's, forward's or asample's
	// result is answered as protobuf to a poll that accepts it.
	route string
	// expire, guarded by Server.mu, makes the next retrieve answer 410
	// (FaultFutureExpire).
	expire bool
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

// protoResult is f's result as a protobuf ForwardBackwardOutput (or
// SampleResponse) when the poll's Accept takes application/x-protobuf and
// f is a forward_backward, forward (or asample) that succeeded; failures
// and other results stay JSON, as the SDK reads them.
func (f *future) protoResult(accept string) ([]byte, bool) {
	if f.route != "forward_backward" && f.route != "forward" && f.route != "asample" || !strings.Contains(strings.ToLower(accept), protoContentType) {
		return nil, false
	}
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(f.result, &probe) != nil || len(probe.Error) > 0 {
		return nil, false
	}
	if f.route == "asample" {
		var out sampleResponse
		if json.Unmarshal(f.result, &out) != nil {
			return nil, false
		}
		return encodeSampleResponseProto(out), true
	}
	var out forwardBackwardOutput
	if json.Unmarshal(f.result, &out) != nil {
		return nil, false
	}
	return encodeForwardBackwardProto(out), true
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
	s.mu.Lock()
	expire := f.expire
	f.expire = false
	s.mu.Unlock()
	if expire {
		writeError(w, errorf(http.StatusGone, "future %q expired (injected by the simulator): send the request again, with the same seq_id", id))
		return
	}
	select {
	case <-f.done:
		if b, ok := f.protoResult(r.Header.Get("Accept")); ok {
			w.Header().Set("Content-Type", protoContentType)
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			_, _ = w.Write(b)
			return
		}
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
