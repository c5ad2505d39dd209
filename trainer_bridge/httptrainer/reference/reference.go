// Package reference is a reference implementation of the trainer service of
// docs/trainer-api.md, for tests: it trains nothing, records every step it
// accepts with its samples expanded, answers increasing versions, and can
// be scripted to fail (5xx, 429 with Retry-After, 4xx with a message, an
// answer lost after the request was handled). It shares no code with the
// client in package httptrainer, so that tests against it check the wire
// format; a step's samples decode as rollout.SampleEntry (encoding/json over
// rollout.Sample's keys), the one entry format of the hand-off formats.
package reference

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/mgrpo/mgrpo/rollout"
)

// Config configures a Server.
type Config struct {
	// BaseModels are the models served (empty: any).
	BaseModels []string
	// APIKey, when set, is the bearer token every request must carry.
	APIKey string
	// PollsBeforeDone is how many polls find a job running before it is
	// trained (0: jobs are trained when submitted and the submission
	// answers done).
	PollsBeforeDone int
	// NoGzip makes the server refuse gzip bodies and say so at start.
	NoGzip bool
	// MaxBodyBytes limits a step body, decompressed (0: 1 GiB).
	MaxBodyBytes int64
	// WeightsPrefix starts every weights reference (empty: "reference://").
	WeightsPrefix string
}

// Fault scripts the answer to one future request.
type Fault struct {
	// Method and Path select the request ("POST", "/v1/steps"); empty
	// fields match any.
	Method, Path string
	// Status and Body are the answer; RetryAfter, when set, its Retry-After
	// header.
	Status     int
	Body       string
	RetryAfter string
	// AfterHandling handles the request first and then answers the fault,
	// as a proxy that times out after the service accepted a step does.
	AfterHandling bool
}

// Step is a step the server trained.
type Step struct {
	Key           string
	Run           string
	Role          rollout.Role
	Step          int
	PolicyVersion int64
	Loss          string
	// Temperature is the body's sampling temperature (0 when absent,
	// which means 1).
	Temperature float64
	// Samples are the batch, expanded; Sequences is how many distinct
	// sequences the body held.
	Samples   []rollout.Sample
	Sequences int
	// Version and Weights are what the step answered.
	Version int64
	Weights string
	// Gzip says whether the body came compressed.
	Gzip bool
}

// Request is one request the server received.
type Request struct {
	Method, Path    string
	Authorization   string
	ContentEncoding string
	IdempotencyKey  string
}

// Server is the reference trainer service. It is safe for concurrent use.
type Server struct {
	cfg Config

	mu       sync.Mutex
	faults   []Fault
	requests []Request
	jobs     map[string]*job
	versions map[string]int64 // by run/role
	steps    []Step
	trains   map[string]int
}

type job struct {
	digest [32]byte
	body   wireStep
	gzip   bool
	polls  int
	state  wireJob
}

// New returns a Server.
func New(cfg Config) *Server {
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 1 << 30
	}
	if cfg.WeightsPrefix == "" {
		cfg.WeightsPrefix = "reference://"
	}
	return &Server{cfg: cfg, jobs: map[string]*job{}, versions: map[string]int64{}, trains: map[string]int{}}
}

// Inject queues faults; each answers the next request it matches.
func (s *Server) Inject(faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, faults...)
}

// Steps returns the steps trained, in order.
func (s *Server) Steps() []Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.steps)
}

// Trains returns how many times the step of key was trained.
func (s *Server) Trains(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trains[key]
}

// Requests returns the requests received, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Forget drops the job of key, as a restarted service that kept no state
// would (the step's training, if done, stays counted).
func (s *Server) Forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.jobs, key)
}

// The wire types, written from docs/trainer-api.md (a step's samples are
// rollout.SampleEntry).
type wireStart struct {
	APIVersion int    `json:"api_version"`
	Run        string `json:"run"`
	Role       string `json:"role"`
	BaseModel  string `json:"base_model"`
	// Temperature is the role's sampling temperature (absent: 1).
	Temperature float64 `json:"temperature"`
}

type wireSequence struct {
	InputIDs []int     `json:"input_ids"`
	LossMask []int8    `json:"loss_mask"`
	Logprobs []float64 `json:"logprobs"`
}

type wireStep struct {
	Key           string                `json:"key"`
	Run           string                `json:"run"`
	Role          string                `json:"role"`
	Step          int                   `json:"step"`
	PolicyVersion int64                 `json:"policy_version"`
	Loss          string                `json:"loss"`
	ClipLow       float64               `json:"clip_low"`
	ClipHigh      float64               `json:"clip_high"`
	Adam          json.RawMessage       `json:"adam"`
	Temperature   float64               `json:"temperature"`
	Sequences     []wireSequence        `json:"sequences"`
	Samples       []rollout.SampleEntry `json:"samples"`
}

type wireResult struct {
	Weights string             `json:"weights"`
	Version int64              `json:"version"`
	Metrics map[string]float64 `json:"metrics"`
}

type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type wireJob struct {
	Key    string      `json:"key"`
	Status string      `json:"status"`
	Result *wireResult `json:"result,omitempty"`
	Error  *wireError  `json:"error,omitempty"`
}

// ServeHTTP serves POST /v1/start, POST /v1/steps and GET /v1/steps under
// any prefix.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if i := strings.Index(path, "/v1/"); i >= 0 {
		path = path[i:]
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: path, Authorization: r.Header.Get("Authorization"),
		ContentEncoding: r.Header.Get("Content-Encoding"), IdempotencyKey: r.Header.Get("Idempotency-Key")})
	fault, faulty := s.takeFault(r.Method, path)
	s.mu.Unlock()
	if faulty && !fault.AfterHandling {
		writeFault(w, fault)
		return
	}
	if s.cfg.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.cfg.APIKey {
		writeError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token")
		return
	}
	rec := &recorder{header: http.Header{}}
	switch {
	case r.Method == http.MethodPost && path == "/v1/start":
		s.start(rec, r)
	case r.Method == http.MethodPost && path == "/v1/steps":
		s.submit(rec, r)
	case r.Method == http.MethodGet && path == "/v1/steps":
		s.poll(rec, r)
	default:
		writeError(rec, http.StatusNotFound, "not_found", "no route "+r.Method+" "+path)
	}
	if faulty {
		writeFault(w, fault)
		return
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.status)
	w.Write(rec.body.Bytes())
}

// takeFault removes and returns the first fault matching; s.mu is held.
func (s *Server) takeFault(method, path string) (Fault, bool) {
	for i, f := range s.faults {
		if (f.Method == "" || f.Method == method) && (f.Path == "" || f.Path == path) {
			s.faults = slices.Delete(s.faults, i, i+1)
			return f, true
		}
	}
	return Fault{}, false
}

func writeFault(w http.ResponseWriter, f Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Status)
	io.WriteString(w, f.Body)
}

// recorder holds an answer until the fault scripting decides whether it
// is sent.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(status int) { r.status = status }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]wireError{"error": {Code: code, Message: msg}})
}

func (s *Server) start(w http.ResponseWriter, r *http.Request) {
	var req wireStart
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "start body: "+err.Error())
		return
	}
	if req.APIVersion != 1 {
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("api_version %d, this server speaks 1", req.APIVersion))
		return
	}
	if len(s.cfg.BaseModels) > 0 && !slices.Contains(s.cfg.BaseModels, req.BaseModel) {
		writeError(w, http.StatusNotFound, "unknown_model", fmt.Sprintf("base model %q is not served; served: %s", req.BaseModel, strings.Join(s.cfg.BaseModels, ", ")))
		return
	}
	s.mu.Lock()
	v := s.versions[req.Run+"/"+req.Role]
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"api_version": 1, "version": v, "weights": "", "accepts_gzip": !s.cfg.NoGzip, "max_body_bytes": s.cfg.MaxBodyBytes})
}

func (s *Server) submit(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "no Idempotency-Key header")
		return
	}
	var body io.Reader = r.Body
	zipped := false
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "":
	case "gzip":
		if s.cfg.NoGzip {
			writeError(w, http.StatusUnsupportedMediaType, "unsupported_encoding", "this server takes no gzip bodies")
			return
		}
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", "gzip body: "+err.Error())
			return
		}
		body, zipped = zr, true
	default:
		writeError(w, http.StatusUnsupportedMediaType, "unsupported_encoding", "Content-Encoding "+enc)
		return
	}
	raw, err := io.ReadAll(io.LimitReader(body, s.cfg.MaxBodyBytes+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "reading the body: "+err.Error())
		return
	}
	if int64(len(raw)) > s.cfg.MaxBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("body over %d bytes", s.cfg.MaxBodyBytes))
		return
	}
	digest := sha256.Sum256(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if j, ok := s.jobs[key]; ok {
		if j.digest != digest {
			writeError(w, http.StatusConflict, "key_reused", "idempotency key "+key+" was used for another batch")
			return
		}
		writeJSON(w, http.StatusOK, j.state)
		return
	}
	var st wireStep
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "step body: "+err.Error())
		return
	}
	if st.Key != key {
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("body key %q differs from the Idempotency-Key header %q", st.Key, key))
		return
	}
	for i, e := range st.Samples {
		if e.Seq < 0 || e.Seq >= len(st.Sequences) {
			writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("sample %d: seq %d of %d sequences", i, e.Seq, len(st.Sequences)))
			return
		}
	}
	j := &job{digest: digest, body: st, gzip: zipped, state: wireJob{Key: key, Status: "queued"}}
	s.jobs[key] = j
	if s.cfg.PollsBeforeDone == 0 {
		s.train(j)
		writeJSON(w, http.StatusOK, j.state)
		return
	}
	writeJSON(w, http.StatusAccepted, j.state)
}

func (s *Server) poll(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[key]
	if !ok {
		writeError(w, http.StatusNotFound, "unknown_key", "no job for key "+key)
		return
	}
	if j.state.Status != "done" {
		j.polls++
		if j.polls >= s.cfg.PollsBeforeDone {
			s.train(j)
		} else {
			j.state.Status = "running"
		}
	}
	writeJSON(w, http.StatusOK, j.state)
}

// train "trains" a job: it records the step and answers the next version of
// its run and role (one above the larger of the last version answered and
// the batch's policy version). s.mu is held.
func (s *Server) train(j *job) {
	b := j.body
	id := b.Run + "/" + b.Role
	v := max(s.versions[id], b.PolicyVersion) + 1
	s.versions[id] = v
	step := Step{Key: j.state.Key, Run: b.Run, Role: rollout.Role(b.Role), Step: b.Step, PolicyVersion: b.PolicyVersion, Loss: b.Loss, Temperature: b.Temperature,
		Sequences: len(b.Sequences), Version: v, Weights: fmt.Sprintf("%s%s/%s/v%d", s.cfg.WeightsPrefix, b.Run, b.Role, v), Gzip: j.gzip}
	var tokens int
	for _, e := range b.Samples {
		q := b.Sequences[e.Seq]
		tokens += len(q.InputIDs)
		step.Samples = append(step.Samples, e.Expand(b.Run, b.Step, rollout.Role(b.Role),
			rollout.Tokens{InputIDs: q.InputIDs, LossMask: q.LossMask, Logprobs: q.Logprobs}))
	}
	s.steps = append(s.steps, step)
	s.trains[j.state.Key]++
	j.state.Status = "done"
	j.state.Result = &wireResult{Weights: step.Weights, Version: v, Metrics: map[string]float64{
		"loss": 1 / float64(1+v), "samples": float64(len(b.Samples)), "tokens": float64(tokens)}}
	j.body = wireStep{} // the samples live in s.steps now
}
