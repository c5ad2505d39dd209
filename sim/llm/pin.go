package llm

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// PinHeader is the request header that names the weight version a
// generation request is to be served with, as a decimal number: the
// server answers it with the weights it held under that version (a
// version that is not a number, such as the initial "default", counts as
// 0) and reports that version, in X-Weight-Version and SGLang's
// meta_info.weight_version, as usual. When it holds no such weights (they
// were let go, see Config.KeptVersions, or never loaded here, as after a
// restart) it serves the current weights and reports them. vLLM and SGLang serve one version and ignore the header; the sim
// honours it so that an asynchronous training run, whose weights change
// while its rollouts run, can have every turn served by a version fixed
// before the rollout started, whatever the timing.
const PinHeader = "X-Weight-Version-Pin"

// DefaultKeptVersions is Config.KeptVersions' default.
const DefaultKeptVersions = 8

// heldWeights is one served version of the weights: the parameters the
// server sampled with while it reported version.
type heldWeights struct {
	version string
	params  *policy.Params
}

// pinKey carries a pinned request's heldWeights in its context.
type pinKey struct{}

// holdLocked records the current version and parameters as the newest
// held ones (replacing the newest when only its parameters changed), and
// lets the oldest go beyond Config.KeptVersions. versionMu must be held.
func (s *Server) holdLocked() {
	cur := heldWeights{version: s.version, params: s.params}
	if n := len(s.held); n > 0 && s.held[n-1].version == cur.version {
		s.held[n-1] = cur
		return
	}
	s.held = append(s.held, cur)
	if extra := len(s.held) - s.cfg.KeptVersions; extra > 0 {
		s.held = append(s.held[:0], s.held[extra:]...)
	}
}

// pinned returns the held weights a request pinned to version v is
// served with (see PinHeader): the newest held under v, false when none
// is.
func (s *Server) pinned(v int64) (heldWeights, bool) {
	s.versionMu.RLock()
	defer s.versionMu.RUnlock()
	for i := len(s.held) - 1; i >= 0; i-- {
		n, err := strconv.ParseInt(s.held[i].version, 10, 64)
		if err != nil {
			n = 0
		}
		if n == v {
			return s.held[i], true
		}
	}
	return heldWeights{}, false
}

// withPin resolves r's PinHeader, if any, into the context the request is
// served with, and reports the version it will be served with in the
// response's X-Weight-Version. A header that is not a number is a 400.
func (s *Server) withPin(w http.ResponseWriter, r *http.Request) (*http.Request, error) {
	h := strings.TrimSpace(r.Header.Get(PinHeader))
	if h == "" {
		return r, nil
	}
	v, err := strconv.ParseInt(h, 10, 64)
	if err != nil {
		return nil, badRequest("%s %q: want a weight version number", PinHeader, h)
	}
	held, ok := s.pinned(v)
	if !ok {
		s.cfg.Logger.Warn("sim llm: pinned weight version no longer held; serving the current one", "pin", v, "served", s.WeightVersion())
		return r, nil
	}
	w.Header().Set("X-Weight-Version", held.version)
	return r.WithContext(context.WithValue(r.Context(), pinKey{}, held)), nil
}

// servedParams returns the parameters a request with context ctx samples
// with: its pinned version's, else the current ones.
func (s *Server) servedParams(ctx context.Context) *policy.Params {
	if held, ok := ctx.Value(pinKey{}).(heldWeights); ok {
		return held.params
	}
	return s.Params()
}

// servedVersion returns the weight version a request with context ctx
// reports: its pinned version, else the current one.
func (s *Server) servedVersion(ctx context.Context) string {
	if held, ok := ctx.Value(pinKey{}).(heldWeights); ok {
		return held.version
	}
	return s.WeightVersion()
}
