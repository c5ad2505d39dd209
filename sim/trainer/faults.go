package trainer

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"strconv"
)

// Fault kinds, as FaultCounts reports them.
const (
	Fault500          = "500"
	Fault503          = "503"
	Fault429          = "429"
	FaultDrop         = "drop"
	FaultFutureExpire = "future_expire"
)

// drawFault draws the fault of one request ("" for none): one uniform
// draw from the seeded fault RNG against the cumulative rates.
func (s *Server) drawFault() string {
	s.faultMu.Lock()
	f := s.faults
	if f.submitTotal() == 0 {
		s.faultMu.Unlock()
		return ""
	}
	u := s.faultRng.Float64()
	s.faultMu.Unlock()
	for _, k := range []struct {
		kind string
		rate float64
	}{{Fault500, f.Rate500}, {Fault503, f.Rate503}, {Fault429, f.Rate429}, {FaultDrop, f.RateDrop}} {
		if u < k.rate {
			s.countFault(k.kind)
			return k.kind
		}
		u -= k.rate
	}
	return ""
}

// drawFutureFault draws whether a new request's future expires once
// (FaultFutureExpire).
func (s *Server) drawFutureFault() bool {
	s.faultMu.Lock()
	rate := s.faults.RateFutureExpire
	if rate <= 0 {
		s.faultMu.Unlock()
		return false
	}
	u := s.faultRng.Float64()
	s.faultMu.Unlock()
	if u < rate {
		s.countFault(FaultFutureExpire)
		return true
	}
	return false
}

func (s *Server) countFault(kind string) {
	s.faultMu.Lock()
	s.faultCounts[kind]++
	s.faultMu.Unlock()
}

// SetFaults replaces the injected failure rates from now on (zero
// RetryAfter: DefaultRetryAfter). The fault RNG goes on where it was.
func (s *Server) SetFaults(f Faults) {
	if f.RetryAfter <= 0 {
		f.RetryAfter = DefaultRetryAfter
	}
	s.faultMu.Lock()
	s.faults = f
	s.faultMu.Unlock()
}

// FaultCounts returns how many faults of each kind were injected so far.
func (s *Server) FaultCounts() map[string]int {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	out := make(map[string]int, len(s.faultCounts))
	for k, v := range s.faultCounts {
		out[k] = v
	}
	return out
}

// withFault serves a request through the fault drawn for it.
func (s *Server) withFault(kind string, w http.ResponseWriter, serve func(http.ResponseWriter)) {
	switch kind {
	case Fault500:
		writeError(w, errorf(http.StatusInternalServerError, "internal server error (injected by the simulator)"))
	case Fault503:
		writeError(w, errorf(http.StatusServiceUnavailable, "the trainer is overloaded (injected by the simulator)"))
	case Fault429:
		e := errorf(http.StatusTooManyRequests, "too many requests (injected by the simulator)")
		s.faultMu.Lock()
		e.retryAfter = max(int(math.Ceil(s.faults.RetryAfter.Seconds())), 1)
		s.faultMu.Unlock()
		writeError(w, e)
	case FaultDrop:
		rec := &recorder{header: http.Header{}}
		serve(rec)
		drop(w, rec)
	default:
		serve(w)
	}
}

// drop writes the head of rec's answer, announcing its full length, and
// half its body, then closes the connection.
func drop(w http.ResponseWriter, rec *recorder) {
	body := rec.body.Bytes()
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\n", rec.code(), http.StatusText(rec.code()))
	h := rec.header.Clone()
	h.Set("Content-Length", strconv.Itoa(len(body)))
	_ = h.Write(buf)
	_, _ = buf.WriteString("\r\n")
	_, _ = buf.Write(body[:len(body)/2])
	_ = buf.Flush()
}

// recorder buffers an answer so that a fault can cut it.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

func (r *recorder) code() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}
