package llm

import (
	"bytes"
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

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// Server is the simulated inference server. Create it with NewServer, serve
// Handler, and Close it when done. All methods are safe for concurrent use.
type Server struct {
	cfg  Config
	tok  *Tokenizer
	pc   *promptCache // chat prompts' ids, turn by turn
	pol  *policy.Policy
	eng  *engine
	stat *stats
	// plain is how many ids can be a top_logprobs alternative.
	plain int
	// logprobs is the policy's reporting mode for cfg's dialect and
	// LogprobsMode.
	logprobs policy.LogprobsMode

	// counter numbers generation requests; it seeds requests without a
	// seed and derives response ids, so a sequential run is reproducible.
	counter atomic.Uint64

	faultMu  sync.Mutex
	faultRng *rand.Rand
	sabotage sabotageLog

	versionMu sync.RWMutex
	version   string
	params    *policy.Params // guarded by versionMu, swapped with version
	held      []heldWeights  // guarded by versionMu: the last versions served, oldest first (pin.go)
	weights   weightState

	genMu sync.Mutex
	gens  []Generation // the generation log (Config.RecordGenerations)

	closeOnce sync.Once
	closed    chan struct{}
	base      context.Context // cancelled by Close
	cancel    context.CancelFunc
}

// NewServer validates cfg, applies its defaults and returns a server.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sim llm config: %w", err)
	}
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:      cfg,
		tok:      NewTokenizer(),
		pol:      policy.NewCached(cfg.Skills, cfg.CacheBytes/2),
		eng:      newEngine(cfg.Slots, cfg.MaxModelLen, cfg.KVCapacity),
		stat:     newStats(),
		faultRng: rand.New(rand.NewPCG(cfg.Seed, newMix("faults").add(cfg.Seed).sum())),
		version:  cfg.WeightVersion,
		params:   cfg.Params,
		closed:   make(chan struct{}),
	}
	s.holdLocked()
	s.pc = newPromptCache(s.tok, cfg.CacheBytes-cfg.CacheBytes/2)
	s.plain = plainTokens(s.tok)
	s.logprobs = cfg.logprobsMode()
	s.base, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Close stops the server's background work: requests waiting in the queue or
// paused are released with an error. It is idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.cancel()
	})
}

// WeightVersion returns the served weight version.
func (s *Server) WeightVersion() string {
	s.versionMu.RLock()
	defer s.versionMu.RUnlock()
	return s.version
}

// Params returns the policy parameters the server samples with now.
func (s *Server) Params() *policy.Params {
	s.versionMu.RLock()
	defer s.versionMu.RUnlock()
	return s.params
}

// SetParams replaces the parameters the server samples with (nil restores
// DefaultParams of its skills). Requests already generating finish with
// the parameters they started with.
func (s *Server) SetParams(p *policy.Params) {
	if p == nil {
		p = policy.DefaultParams(s.cfg.Skills)
	}
	s.versionMu.Lock()
	s.params = p
	s.holdLocked()
	s.versionMu.Unlock()
}

// SetWeightVersion changes the served weight version, as a weight sync does.
func (s *Server) SetWeightVersion(v string) {
	s.versionMu.Lock()
	s.version = v
	s.holdLocked()
	s.versionMu.Unlock()
}

// Tokenizer returns the server's tokenizer, for tests and tools that need the
// exact token ids the server uses.
func (s *Server) Tokenizer() *Tokenizer { return s.tok }

// Handler returns the HTTP handler serving the configured dialect's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	gen := func(h http.HandlerFunc) http.Handler { return s.withBody(s.withFaults(h)) }
	plain := func(h http.HandlerFunc) http.Handler { return s.withBody(h) }

	off := s.cfg.Disabled
	mux.Handle("POST /v1/chat/completions", gen(s.handleChat))
	mux.Handle("POST /v1/completions", gen(s.handleCompletions))
	mux.Handle("GET /v1/models", plain(s.handleModels))
	mux.Handle("GET /health", plain(s.handleHealth))
	mux.Handle("GET /metrics", plain(s.handleMetrics))
	if s.cfg.Dialect == DialectSGLang {
		if !off.Generate {
			mux.Handle("POST /generate", gen(s.handleGenerate))
		}
		if !off.Tokenize {
			mux.Handle("POST /v1/tokenize", plain(s.handleTokenize))
			mux.Handle("POST /v1/detokenize", plain(s.handleDetokenize))
		}
		mux.Handle("GET /get_model_info", plain(s.handleModelInfo))
		mux.Handle("POST /update_weights_from_disk", plain(s.handleUpdateWeights))
		mux.Handle("GET /get_weight_version", plain(s.handleGetWeightVersion))
		mux.Handle("POST /update_weight_version", plain(s.handleUpdateWeightVersion))
		mux.Handle("POST /pause_generation", plain(s.handlePauseGeneration))
		mux.Handle("POST /continue_generation", plain(s.handleContinueGeneration))
	} else {
		if !off.Tokenize {
			mux.Handle("POST /tokenize", plain(s.handleTokenize))
			mux.Handle("POST /detokenize", plain(s.handleDetokenize))
		}
		if !off.Render {
			mux.Handle("POST /v1/chat/completions/render", plain(s.handleChatRender))
			mux.Handle("POST /v1/completions/render", plain(s.handleCompletionsRender))
		}
		if !off.Generate {
			mux.Handle("POST /inference/v1/generate", gen(s.handleTokensGenerate))
		}
		if !off.Derender {
			mux.Handle("POST /v1/chat/completions/derender", plain(s.handleChatDerender))
			mux.Handle("POST /v1/completions/derender", plain(s.handleCompletionsDerender))
		}
		// vLLM serves its control routes only in dev mode
		// (VLLM_SERVER_DEV_MODE=1); without it they are unknown routes.
		if !s.cfg.NoDevMode {
			mux.Handle("POST /sleep", plain(s.handleSleep))
			mux.Handle("POST /wake_up", plain(s.handleWakeUp))
			mux.Handle("GET /is_sleeping", plain(s.handleIsSleeping))
			mux.Handle("POST /pause", plain(s.handlePause))
			mux.Handle("POST /resume", plain(s.handleResume))
			mux.Handle("GET /is_paused", plain(s.handleIsPaused))
			mux.Handle("POST /reset_prefix_cache", plain(s.handleResetPrefixCache))
			mux.Handle("GET /weight_info", plain(s.handleGetWeightVersion))
			mux.Handle("POST /update_weight_version", plain(s.handleUpdateWeightVersion))
			mux.Handle("POST /sim/update_weights", plain(s.handleSimUpdateWeights))
		}
	}
	if s.cfg.RecordGenerations {
		mux.Handle("GET /sim/generations", plain(s.handleGenerations))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// FastAPI's answer for an unknown route.
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	})
	return mux
}

// withBody caps the request body, ties the request to the server's lifetime
// and reports the served weight version on every response (a pinned
// request's, see PinHeader).
func (s *Server) withBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		w.Header().Set("X-Weight-Version", s.WeightVersion())
		r, err := s.withPin(w, r)
		if err != nil {
			s.writeError(w, err)
			return
		}
		select {
		case <-s.closed:
			s.writeError(w, &apiError{status: http.StatusServiceUnavailable, errType: "ServiceUnavailableError", message: "The server is shutting down."})
			return
		default:
		}
		// Requests end when the client goes away or the server closes.
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(s.base, cancel)
		defer stop()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// decodeBody reads a JSON request body into v. It rejects unknown fields
// when the server is strict, maps an oversized body to 413 and every other
// problem to a 400 naming the field.
func (s *Server) decodeBody(r *http.Request, v any) error {
	buf, err := readPooled(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &apiError{status: http.StatusRequestEntityTooLarge, errType: "BadRequestError", message: fmt.Sprintf("Request body exceeds the limit of %d bytes.", tooBig.Limit)}
		}
		return badRequest("read request body: %v", err)
	}
	defer putBody(buf)
	return s.decodeBytes(buf.Bytes(), v)
}

// decodeBytes decodes body into v with encoding/json, after trying the
// sim's own fast decoder for v's type, which gives the same result or
// defers. Neither shares code with the client (see doc.go), so a client
// that writes JSON encoding/json would not read fails here.
func (s *Server) decodeBytes(body []byte, v any) error {
	if req, ok := v.(*chatRequest); ok && decodeChatFast(body, req) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if s.cfg.Strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return badRequest("%s", describeJSONError(err))
	}
	if dec.More() {
		return badRequest("JSON decode error: extra data after the request object")
	}
	return nil
}

// describeJSONError words a decoding error the way a validation error reads.
func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "(root)"
		}
		return fmt.Sprintf("1 validation error: body.%s: input should be %s, got JSON %s", field, goTypeName(typeErr.Type.String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("JSON decode error at byte %d: %v", syntaxErr.Offset, err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "JSON decode error: the request body is empty or truncated"
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return "1 validation error: extra inputs are not permitted: " + strings.TrimPrefix(err.Error(), "json: ")
	default:
		return err.Error()
	}
}

// goTypeName names a Go type as a JSON type for error messages.
func goTypeName(t string) string {
	switch {
	case strings.Contains(t, "int"):
		return "a valid integer"
	case strings.Contains(t, "float"):
		return "a valid number"
	case t == "bool" || t == "*bool":
		return "a valid boolean"
	case strings.Contains(t, "string"):
		return "a valid string"
	case strings.HasPrefix(t, "[]") || strings.HasPrefix(t, "*[]"):
		return "a valid list"
	default:
		return "a valid object"
	}
}

// nextCounter numbers a generation request.
func (s *Server) nextCounter() uint64 { return s.counter.Add(1) }

// responseID derives the response id of request number n: 32 hex digits.
func (s *Server) responseID(n uint64) string {
	a := newMix("id").add(s.cfg.Seed).add(n).sum()
	b := newMix("id2").add(a).sum()
	return fmt.Sprintf("%016x%016x", a, b)
}
