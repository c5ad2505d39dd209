package trainer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server is a Tinker-shaped trainer: sessions, models, and futures for
// their requests, all in memory. It is safe for concurrent use.
type Server struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	mu         sync.Mutex
	sessions   map[string]*session
	nSessions  int
	models     map[string]*model
	nModels    int
	creates    map[string]*createEntry // by session and model_seq_id
	futures    map[string]*future
	nextFuture int
	states     map[string]*snapshot // saved training states, by tinker:// path

	// The sampling routes' state (sampling.go): sampler weights by
	// tinker:// path, sampling sessions and their creations by session
	// and sampling_session_seq_id, and the sampling futures kept, oldest
	// first.
	samplers         map[string]samplerWeights
	samplingSessions map[string]*samplingSession
	samplingCreates  map[string]*samplingCreate
	nSampling        int
	nUnsessioned     uint64
	keptSamples      []keptSample

	polls atomic.Int64 // long polls held

	// jwt is the JWT auth mode (nil: off); jwtIssued and jwtRefused count
	// its tokens and refusals, under mu.
	jwt                   *jwtAuth
	jwtIssued, jwtRefused int

	faultMu     sync.Mutex
	faults      Faults
	faultRng    *rand.Rand
	faultCounts map[string]int
}

// New returns a Server for cfg, with the documented defaults for its zero
// fields. cfg.Policy must be set.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg: cfg, ctx: ctx, cancel: cancel,
		sessions: map[string]*session{},
		models:   map[string]*model{},
		creates:  map[string]*createEntry{},
		futures:  map[string]*future{},
		states:   map[string]*snapshot{},

		samplers:         map[string]samplerWeights{},
		samplingSessions: map[string]*samplingSession{},
		samplingCreates:  map[string]*samplingCreate{},
		faultRng:         rand.New(rand.NewPCG(cfg.Seed, 0x51a7a1e7)),
		faultCounts:      map[string]int{},
		faults:           cfg.Faults,
	}
	if cfg.JWTLifetime > 0 {
		s.jwt = newJWTAuth()
	}
	return s
}

// Open is New, restoring the models persisted in cfg.CheckpointDir when
// cfg.Persist is set (see Config.Persist). A state file it cannot read is
// an error, not a fresh start.
func Open(cfg Config) (*Server, error) {
	s := New(cfg)
	if !s.cfg.Persist {
		return s, nil
	}
	if s.cfg.CheckpointDir == "" {
		return nil, errors.New("sim trainer: Persist needs a CheckpointDir")
	}
	if err := s.restore(); err != nil {
		return nil, err
	}
	return s, nil
}

// Close stops the models' request runners (a request running finishes
// first) and ends the long polls. It is idempotent; the handler answers
// 503 afterwards.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.cancel()
		s.wg.Wait()
	})
	return nil
}

// Params returns a copy of a model's current parameters (false for an
// unknown model).
func (s *Server) Params(modelID string) ([]float64, bool) {
	m := s.model(modelID)
	if m == nil {
		return nil, false
	}
	m.st.Lock()
	defer m.st.Unlock()
	return append([]float64(nil), m.params...), true
}

// Handler serves the Tinker routes under /api/v1: GET
// get_server_capabilities and healthz; POST create_session,
// session_heartbeat, create_model, get_info, forward, forward_backward,
// optim_step, save_weights_for_sampler, retrieve_future, the sampling
// routes and the rest the package documentation lists.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serve) }

// routes maps a route to its method.
var routes = map[string]string{
	"healthz":                  http.MethodGet,
	"get_server_capabilities":  http.MethodGet,
	"create_session":           http.MethodPost,
	"session_heartbeat":        http.MethodPost,
	"create_model":             http.MethodPost,
	"get_info":                 http.MethodPost,
	"forward":                  http.MethodPost,
	"forward_backward":         http.MethodPost,
	"optim_step":               http.MethodPost,
	"save_weights_for_sampler": http.MethodPost,
	"retrieve_future":          http.MethodPost,
	"client/config":            http.MethodPost,
	"auth/token":               http.MethodPost,
	"telemetry":                http.MethodPost,
	"save_weights":             http.MethodPost,
	"load_weights":             http.MethodPost,
	"weights_info":             http.MethodPost,
	"training_runs":            http.MethodGet,
	"training_runs/*":          http.MethodGet,
	"models/*":                 http.MethodGet,
	"create_sampling_session":  http.MethodPost,
	"asample":                  http.MethodPost,
	"sample":                   http.MethodPost,
}

// unfaulted are the routes fault injection spares: the health check, and
// the SDK's client configuration and telemetry, which it sends outside its
// retry of training requests.
var unfaulted = map[string]bool{"healthz": true, "client/config": true, "auth/token": true, "telemetry": true}

// routeKey is the key of path's route in routes: training_runs/ID… and
// models/ID/checkpoints are one route each.
func routeKey(route string) string {
	for _, p := range []string{"training_runs/", "models/"} {
		if strings.HasPrefix(route, p) {
			return p + "*"
		}
	}
	return route
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	route, ok := strings.CutPrefix(r.URL.Path, "/api/v1/")
	method, known := routes[routeKey(route)]
	if !ok || !known {
		writeError(w, errorf(http.StatusNotFound, "no route %s", r.URL.Path))
		return
	}
	if r.Method != method {
		w.Header().Set("Allow", method)
		writeError(w, errorf(http.StatusMethodNotAllowed, "%s takes %s, not %s", route, method, r.Method))
		return
	}
	if s.ctx.Err() != nil {
		writeError(w, errorf(http.StatusServiceUnavailable, "server shutting down"))
		return
	}
	if s.jwt != nil {
		if !s.checkJWT(w, r, route) {
			return
		}
	}
	if s.cfg.APIKey != "" && (s.jwt == nil || jwtExempt[route]) && r.Header.Get("X-API-Key") != s.cfg.APIKey && route != "healthz" {
		writeError(w, errorf(http.StatusUnauthorized, "invalid or missing API key (X-API-Key)"))
		return
	}
	var body []byte
	if method == http.MethodPost {
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			writeError(w, errorf(http.StatusRequestEntityTooLarge, "%s: body over %d bytes", route, s.cfg.MaxBodyBytes))
			return
		case err != nil:
			return // the client went away
		}
	}
	fault := ""
	if !unfaulted[route] {
		fault = s.drawFault()
	}
	s.withFault(fault, w, func(w http.ResponseWriter) { s.dispatch(w, r, route, body) })
}

func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, route string, body []byte) {
	switch route {
	case "healthz":
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	case "get_server_capabilities":
		models := make([]map[string]string, len(s.cfg.BaseModels))
		for i, m := range s.cfg.BaseModels {
			models[i] = map[string]string{"model_name": m}
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"supported_models":   models,
			"supported_loss_fns": []string{lossImportanceSampling, lossPPO, lossCrossEntropy},
		})
	case "create_session":
		s.createSession(w, body)
	case "session_heartbeat":
		s.heartbeat(w, body)
	case "create_model":
		s.createModel(w, body)
	case "get_info":
		s.getInfo(w, body)
	case "retrieve_future":
		s.retrieveFuture(w, r, body)
	case "client/config":
		s.clientConfig(w, body)
	case "auth/token":
		s.authToken(w)
	case "telemetry":
		// Accepted and dropped: the SDK sends its events every second and
		// waits for them on a fatal error.
		writeJSON(w, http.StatusOK, map[string]string{"status": "accepted"})
	case "weights_info":
		s.weightsInfo(w, body)
	case "training_runs":
		s.trainingRuns(w, r)
	case "create_sampling_session":
		s.createSamplingSession(w, body)
	case "asample", "sample":
		s.asample(w, route, body, route == "sample")
	default:
		if k := routeKey(route); k != route {
			s.trainingRun(w, route)
			return
		}
		if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
			writeError(w, errorf(http.StatusUnsupportedMediaType, "%s: Content-Encoding %q is not served (client/config says proto_compress_fwdbwd false)", route, enc))
			return
		}
		s.sequenced(w, route, r.Header.Get("Content-Type"), body)
	}
}

func (s *Server) model(id string) *model {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.models[id]
}

// sequenced checks and queues a forward, forward_backward, optim_step,
// save_weights, load_weights or save_weights_for_sampler request and
// answers its future. forward_backward comes as JSON or, with Content-Type
// application/x-protobuf, as the SDK's ForwardBackwardRequest (whose
// forward_only makes it a forward). A body that cannot be read, or names
// no model or seq_id, is a 400; a request that can be read but is wrong
// (a bad datum, loss, path or Adam parameter) still takes its seq_id and
// answers a future that fails with category "user": the SDK numbers its
// requests before sending them and never sends a refused one again, so
// the model's queue must not wait for it.
func (s *Server) sequenced(w http.ResponseWriter, route, contentType string, body []byte) {
	var (
		modelID string
		seq     *int64
		fp      string
		// build makes the request's run once its seq_id is known.
		build func(seq int64) func(*model) (any, *failure)
		bad   *httpError
	)
	isProto := strings.HasPrefix(strings.TrimSpace(strings.ToLower(contentType)), protoContentType)
	if isProto && route != "forward_backward" {
		writeError(w, errorf(http.StatusUnsupportedMediaType, "%s: protobuf bodies are served for forward_backward only; send JSON", route))
		return
	}
	switch route {
	case "forward_backward", "forward":
		var in *lossInput
		backward := route == "forward_backward"
		if isProto {
			req, err := decodeForwardBackwardProto(body)
			if err != nil {
				writeError(w, errorf(http.StatusBadRequest, "%s: invalid protobuf ForwardBackwardRequest: %v", route, err))
				return
			}
			modelID, in, backward = req.ModelID, req.Input, !req.ForwardOnly
			if req.SeqID != 0 {
				seq = &req.SeqID
			}
			canon, err := json.Marshal(req)
			if err != nil {
				writeError(w, errorf(http.StatusBadRequest, "%s: %v", route, err))
				return
			}
			fp = fingerprint("proto:"+route, canon)
		} else if route == "forward" {
			var req forwardRequest
			if e := decode(route, body, &req); e != nil {
				writeError(w, e)
				return
			}
			modelID, seq, in = req.ModelID, req.SeqID, req.ForwardInput
		} else {
			var req forwardBackwardRequest
			if e := decode(route, body, &req); e != nil {
				writeError(w, e)
				return
			}
			modelID, seq, in = req.ModelID, req.SeqID, req.ForwardBackwardInput
		}
		if in == nil {
			bad = errorf(http.StatusBadRequest, "%s: missing %s_input", route, route)
			break
		}
		loss, e := parseLoss(in.LossFn, in.LossFnConfig)
		if e != nil {
			bad = e
			break
		}
		data, e := parseData(in.Data, loss.fn, s.cfg.Policy)
		if e != nil {
			bad = e
			break
		}
		build = func(int64) func(*model) (any, *failure) { return s.lossRun(data, loss, backward) }
	case "optim_step":
		var req optimStepRequest
		if e := decode(route, body, &req); e != nil {
			writeError(w, e)
			return
		}
		modelID, seq = req.ModelID, req.SeqID
		c, e := parseAdam(req.AdamParams)
		if e != nil {
			bad = e
			break
		}
		build = func(int64) func(*model) (any, *failure) { return s.afterStepTime(optimRun(c)) }
	case "save_weights_for_sampler", "save_weights":
		var req saveWeightsRequest
		if e := decode(route, body, &req); e != nil {
			writeError(w, e)
			return
		}
		modelID, seq = req.ModelID, req.SeqID
		if req.Path != "" && !validCheckpointName(req.Path) {
			bad = errorf(http.StatusBadRequest, "%s: path %q: want 1 to 255 of A-Z a-z 0-9 _ -", route, clip(req.Path))
			break
		}
		build = func(seq int64) func(*model) (any, *failure) {
			name := req.Path
			if route == "save_weights" {
				if name == "" {
					name = fmt.Sprintf("state-%06d", seq)
				}
				return s.saveStateRun(name)
			}
			if name == "" {
				// The SDK's save_weights_and_get_sampling_client names none.
				name = fmt.Sprintf("sampler-%06d", seq)
			}
			return s.saveRun(name)
		}
	case "load_weights":
		var req loadWeightsRequest
		if e := decode(route, body, &req); e != nil {
			writeError(w, e)
			return
		}
		modelID, seq = req.ModelID, req.SeqID
		if req.Path == "" {
			bad = errorf(http.StatusBadRequest, "load_weights: missing path (a tinker:// path save_weights answered)")
			break
		}
		build = func(int64) func(*model) (any, *failure) { return s.loadRun(req.Path, req.Optimizer) }
	}
	if modelID == "" {
		writeError(w, errorf(http.StatusBadRequest, "%s: missing model_id", route))
		return
	}
	if seq == nil {
		writeError(w, errorf(http.StatusBadRequest, "%s: missing seq_id", route))
		return
	}
	m := s.model(modelID)
	if m == nil {
		writeError(w, errorf(http.StatusNotFound, "%s: model %q not found", route, modelID))
		return
	}
	if fp == "" {
		fp = fingerprint(route, body)
	}
	var run func(*model) (any, *failure)
	if bad != nil {
		msg := bad.detail
		run = func(*model) (any, *failure) { return nil, &failure{categoryUser, msg} }
	} else {
		run = build(*seq)
	}
	f, e := s.submit(m, route, *seq, fp, run)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, futureAnswer{RequestID: f.id, ModelID: m.id})
}

// afterStepTime makes run wait Config.StepTime first, as a GPU trainer's
// optimizer step takes time; Close cuts the wait short, failing the
// request (category server, so it may be sent again).
func (s *Server) afterStepTime(run func(*model) (any, *failure)) func(*model) (any, *failure) {
	if s.cfg.StepTime <= 0 {
		return run
	}
	return func(m *model) (any, *failure) {
		t := time.NewTimer(s.cfg.StepTime)
		defer t.Stop()
		select {
		case <-t.C:
			return run(m)
		case <-s.ctx.Done():
			return nil, &failure{categoryServer, "optim_step: the trainer is shutting down"}
		}
	}
}

// KeptFutures returns how many futures the server holds (see
// Config.KeptSteps).
func (s *Server) KeptFutures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.futures)
}

// Config returns the server's configuration, defaults filled in.
func (s *Server) Config() Config { return s.cfg }
