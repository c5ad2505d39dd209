package llm

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"
)

// Sabotage is one generation request the server broke on purpose (an
// injected fault or an endpoint death), as Server.Sabotaged lists them:
// which route, what was done, and the request's sampling seed (nil when it
// sent none). Clients derive a seed per turn and trajectory, so a test can
// tell, rollout by rollout, which rollouts the server broke.
type Sabotage struct {
	// N numbers the sabotaged requests from 1 in the order they came.
	N     int    `json:"n"`
	Kind  string `json:"kind"`
	Route string `json:"route"`
	Seed  *int64 `json:"seed,omitempty"`
}

// sabotageLog keeps the sabotaged requests.
type sabotageLog struct {
	mu      sync.Mutex
	entries []Sabotage
	// requests counts generation requests, for DeathEvery; deadUntil is
	// the end of the current death window.
	requests  int
	deadUntil time.Time
}

// Sabotaged returns the generation requests the server broke on purpose so
// far, in order.
func (s *Server) Sabotaged() []Sabotage {
	s.sabotage.mu.Lock()
	defer s.sabotage.mu.Unlock()
	return append([]Sabotage(nil), s.sabotage.entries...)
}

// dead counts a generation request and reports whether the endpoint is in
// a death window (Faults.DeathEvery, DeathFor), opening one after every
// DeathEvery-th request.
func (s *Server) dead() bool {
	f := s.cfg.Faults
	if f.DeathEvery <= 0 {
		return false
	}
	l := &s.sabotage
	l.mu.Lock()
	defer l.mu.Unlock()
	now := s.cfg.Clock()
	if now.Before(l.deadUntil) {
		return true
	}
	l.requests++
	if l.requests%f.DeathEvery == 0 {
		l.deadUntil = now.Add(f.DeathFor)
	}
	return false
}

// logSabotage records that r was broken with kind. It reads r's body for
// the seed and puts it back, so the handler (a stall, a drop) still reads
// it whole.
func (s *Server) logSabotage(r *http.Request, kind string) {
	var seed *int64
	if r.Body != nil {
		body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, s.cfg.MaxBodyBytes))
		if err == nil {
			var req struct {
				Seed *int64 `json:"seed"`
				// SGLang's /generate sends it in sampling_params.
				Params struct {
					Seed *int64 `json:"sampling_seed"`
				} `json:"sampling_params"`
			}
			if json.Unmarshal(body, &req) == nil {
				seed = req.Seed
				if seed == nil {
					seed = req.Params.Seed
				}
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	l := &s.sabotage
	l.mu.Lock()
	l.entries = append(l.entries, Sabotage{N: len(l.entries) + 1, Kind: kind, Route: r.URL.Path, Seed: seed})
	l.mu.Unlock()
}
