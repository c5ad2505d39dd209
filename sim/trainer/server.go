package trainer

import (
	"context"
	"errors"
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

	polls atomic.Int64 // long polls held

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
	return &Server{
		cfg: cfg, ctx: ctx, cancel: cancel,
		sessions:    map[string]*session{},
		models:      map[string]*model{},
		creates:     map[string]*createEntry{},
		futures:     map[string]*future{},
		faultRng:    rand.New(rand.NewPCG(cfg.Seed, 0x51a7a1e7)),
		faultCounts: map[string]int{},
		faults:      cfg.Faults,
	}
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
// optim_step, save_weights_for_sampler and retrieve_future.
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
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	route, ok := strings.CutPrefix(r.URL.Path, "/api/v1/")
	method, known := routes[route]
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
	if s.cfg.APIKey != "" && r.Header.Get("X-API-Key") != s.cfg.APIKey && route != "healthz" {
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
	if route != "healthz" {
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
	default:
		s.sequenced(w, route, body)
	}
}

func (s *Server) model(id string) *model {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.models[id]
}

// sequenced checks and queues a forward, forward_backward, optim_step or
// save_weights_for_sampler request and answers its future.
func (s *Server) sequenced(w http.ResponseWriter, route string, body []byte) {
	var (
		modelID string
		seq     *int64
		run     func(*model) (any, *failure)
		bad     *httpError
	)
	switch route {
	case "forward_backward", "forward":
		var in *lossInput
		if route == "forward" {
			var req forwardRequest
			bad = decode(route, body, &req)
			modelID, seq, in = req.ModelID, req.SeqID, req.ForwardInput
		} else {
			var req forwardBackwardRequest
			bad = decode(route, body, &req)
			modelID, seq, in = req.ModelID, req.SeqID, req.ForwardBackwardInput
		}
		if bad == nil && in == nil {
			bad = errorf(http.StatusBadRequest, "%s: missing %s_input", route, route)
		}
		if bad == nil {
			var loss lossSpec
			if loss, bad = parseLoss(in.LossFn, in.LossFnConfig); bad == nil {
				var data []datum
				if data, bad = parseData(in.Data, loss.fn, s.cfg.Policy); bad == nil {
					run = s.lossRun(data, loss, route == "forward_backward")
				}
			}
		}
	case "optim_step":
		var req optimStepRequest
		if bad = decode(route, body, &req); bad == nil {
			modelID, seq = req.ModelID, req.SeqID
			var c adamConfig
			if c, bad = parseAdam(req.AdamParams); bad == nil {
				run = s.afterStepTime(optimRun(c))
			}
		}
	case "save_weights_for_sampler":
		var req saveWeightsRequest
		if bad = decode(route, body, &req); bad == nil {
			modelID, seq = req.ModelID, req.SeqID
			if !checkpointName.MatchString(req.Path) {
				bad = errorf(http.StatusBadRequest, "save_weights_for_sampler: path %q: want 1 to 255 of A-Z a-z 0-9 _ -", clip(req.Path))
			} else {
				run = s.saveRun(req.Path)
			}
		}
	}
	if bad == nil && modelID == "" {
		bad = errorf(http.StatusBadRequest, "%s: missing model_id", route)
	}
	if bad == nil && seq == nil {
		bad = errorf(http.StatusBadRequest, "%s: missing seq_id", route)
	}
	if bad != nil {
		writeError(w, bad)
		return
	}
	m := s.model(modelID)
	if m == nil {
		writeError(w, errorf(http.StatusNotFound, "%s: model %q not found", route, modelID))
		return
	}
	f, bad := s.submit(m, route, *seq, fingerprint(route, body), run)
	if bad != nil {
		writeError(w, bad)
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
