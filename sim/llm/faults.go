package llm

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Fault kinds, as counted in sim:injected_faults_total.
const (
	fault500       = "500"
	fault503       = "503"
	fault429       = "429"
	faultDrop      = "drop"
	faultMalformed = "malformed"
	faultStall     = "stall"
	// faultStallStream is a stream that stops mid-way (Faults.RateStallStream).
	faultStallStream = "stall_stream"
	// faultDeath is a request answered 503 in a death window
	// (Faults.DeathEvery).
	faultDeath = "death"
)

var faultKinds = []string{fault500, fault503, fault429, faultDrop, faultMalformed, faultStall, faultStallStream, faultDeath}

// drawFault draws the fault of one request ("" for none) from the seeded
// fault RNG: one uniform draw against the cumulative rates.
func (s *Server) drawFault() string {
	f := s.cfg.Faults
	if f.total() == 0 {
		return ""
	}
	s.faultMu.Lock()
	u := s.faultRng.Float64()
	s.faultMu.Unlock()
	for _, k := range []struct {
		kind string
		rate float64
	}{{fault500, f.Rate500}, {fault503, f.Rate503}, {fault429, f.Rate429}, {faultDrop, f.RateDrop}, {faultMalformed, f.RateMalformed}, {faultStall, f.RateStall}, {faultStallStream, f.RateStallStream}} {
		if u < k.rate {
			return k.kind
		}
		u -= k.rate
	}
	return ""
}

// withFaults injects the configured faults into a generation route.
func (s *Server) withFaults(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		kind := s.drawFault()
		if s.dead() {
			kind = faultDeath
		}
		if kind != "" {
			s.countFault(kind)
			s.logSabotage(r, kind)
		}
		switch kind {
		case "":
			h(w, r)
		case faultDeath:
			s.writeFaultError(w, r, http.StatusServiceUnavailable, "The server is not answering (an endpoint death injected by the simulator).")
		case fault500:
			s.writeFaultError(w, r, http.StatusInternalServerError, "Internal server error (injected by the simulator).")
		case fault503:
			s.writeFaultError(w, r, http.StatusServiceUnavailable, "The server is overloaded (injected by the simulator).")
		case fault429:
			secs := int(math.Ceil(s.cfg.Faults.RetryAfter.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
			s.writeFaultError(w, r, http.StatusTooManyRequests, "Too many requests (injected by the simulator).")
		case faultStall:
			// Read the body first: Go's server notices a client that went
			// away only once the request body is consumed, and a stall must
			// end when its client gives up.
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
			if err != nil {
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if !s.stall(r) {
				return
			}
			h(w, r)
		case faultStallStream:
			// As for a stall, the body is read first so that the handler
			// notices a client that leaves.
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
			if err != nil {
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			h(&stallWriter{ResponseWriter: w, s: s, r: r, left: s.cfg.Faults.StreamStallAfter}, r)
		case faultMalformed:
			rec := newRecorder()
			h(rec, r)
			copyHeader(w.Header(), rec.header)
			body := garble(rec.body.Bytes())
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(rec.statusCode())
			_, _ = w.Write(body)
		case faultDrop:
			rec := newRecorder()
			h(rec, r)
			s.drop(w, rec)
		}
	}
}

// writeFaultError writes an injected error in the route's error shape.
func (s *Server) writeFaultError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	e := &apiError{status: status, errType: errorTypeFor(status), message: msg}
	if r.URL.Path == "/generate" {
		writeNativeError(w, e)
		return
	}
	s.writeError(w, e)
}

// stall holds the request until the client leaves (false) or the stall
// duration passes (true).
func (s *Server) stall(r *http.Request) bool {
	d := s.cfg.Faults.StallDuration
	if d <= 0 {
		select {
		case <-r.Context().Done():
		case <-s.closed:
		}
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return false
	case <-s.closed:
		return false
	case <-t.C:
		return true
	}
}

// stallWriter passes a response's first left writes through (a streaming
// handler writes one event per write), then holds the next one as stall
// does: until the client leaves, when the write fails and the handler
// stops, or for the stall duration, after which the response goes on. An
// unstreamed answer, written at once, is thus held before any byte.
type stallWriter struct {
	http.ResponseWriter
	s       *Server
	r       *http.Request
	left    int
	wrote   bool
	stream  bool
	stalled bool
	gone    bool
}

func (w *stallWriter) Write(b []byte) (int, error) {
	if w.gone {
		return 0, http.ErrHandlerTimeout
	}
	if !w.wrote {
		w.wrote = true
		w.stream = strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
		if !w.stream {
			w.left = 0
		}
	}
	if w.left == 0 && !w.stalled {
		w.stalled = true
		if w.stream {
			// The events so far reach the client; an unstreamed answer's
			// head stays buffered, so nothing does.
			w.Flush()
		}
		if !w.s.stall(w.r) {
			w.gone = true
			return 0, http.ErrHandlerTimeout
		}
	}
	if w.left > 0 {
		w.left--
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes flushes through, so the events before the stall arrive.
func (w *stallWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// drop writes the response head, announcing the full length, and half the
// body, then closes the connection.
func (s *Server) drop(w http.ResponseWriter, rec *recorder) {
	body := rec.body.Bytes()
	hj, ok := w.(http.Hijacker)
	if !ok {
		// HTTP/2 or a wrapped writer: abort the stream mid-body instead.
		copyHeader(w.Header(), rec.header)
		w.WriteHeader(rec.statusCode())
		_, _ = w.Write(body[:len(body)/2])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	status := rec.statusCode()
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	h := rec.header.Clone()
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Del("Transfer-Encoding")
	_ = h.Write(buf)
	_, _ = buf.WriteString("\r\n")
	_, _ = buf.Write(body[:len(body)/2])
	_ = buf.Flush()
}

// garble truncates a body and appends bytes that are not JSON.
func garble(b []byte) []byte {
	out := append([]byte(nil), b[:len(b)/2]...)
	return append(out, []byte("\x00\xff<!-- truncated -->")...)
}

// recorder buffers a handler's response so a fault can mangle it.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

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

// Flush lets streaming handlers run against the recorder.
func (r *recorder) Flush() {}

func (r *recorder) statusCode() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = append([]string(nil), v...)
	}
}
