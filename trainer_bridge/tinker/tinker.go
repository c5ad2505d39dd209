package tinker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/mgrpo/mgrpo/internal/httpretry"
	"github.com/mgrpo/mgrpo/internal/redact"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

var (
	_ trainerbridge.Trainer = (*Trainer)(nil)
	_ trainerbridge.Resumer = (*Trainer)(nil)
)

func init() {
	trainerbridge.Register("tinker+http", open)
	trainerbridge.Register("tinker+https", open)
}

func open(_ context.Context, u *url.URL, o trainerbridge.Options) (trainerbridge.Trainer, error) {
	return New(u.String(), o, Config{})
}

// Defaults of the options and the configuration.
const (
	DefaultAPIKeyEnv         = "TINKER_API_KEY"
	DefaultLoRARank          = 32 // the SDK's create_lora_training_client default
	DefaultClip              = 0.2
	DefaultHeartbeatInterval = 10 * time.Second
	DefaultPollTimeout       = 60 * time.Second
	DefaultMaxRetries        = 8
)

// Config holds what only this backend has; its zero value is the
// defaults. Open uses the zero Config.
type Config struct {
	// HTTPClient sends the requests (nil: a client of its own with
	// net/http's default transport).
	HTTPClient *http.Client
	// HeartbeatInterval is the time between session heartbeats
	// (DefaultHeartbeatInterval).
	HeartbeatInterval time.Duration
	// PollTimeout bounds one retrieve_future long poll on our side
	// (DefaultPollTimeout); the poll is then sent again.
	PollTimeout time.Duration
	// Backoff spaces retries (DefaultBackoff); MaxRetries is how many
	// retries one request gets for 429, 5xx, connection errors and
	// expired futures before ErrUnavailable (DefaultMaxRetries).
	Backoff    retryablehttp.Backoff
	MaxRetries int
	// MaxDatums and MaxBytes bound one forward_backward request: the
	// server's limits from client/config (DefaultMaxDatums and
	// DefaultMaxBytes of body when it announces none), or these when they
	// are smaller (0: no bound of our own).
	MaxDatums, MaxBytes int
	// SDKVersion is client/config's and create_session's sdk_version
	// (empty: "mgrpo/" and mgrpo's version as the build recorded it).
	SDKVersion string
	// FreezeUnembed, FreezeMLP and FreezeAttn leave those layers without
	// LoRA (the SDK's train_unembed, train_mlp and train_attn, true by
	// default).
	FreezeUnembed, FreezeMLP, FreezeAttn bool
	// Logger receives heartbeat failures and warnings (nil:
	// slog.Default()).
	Logger *slog.Logger
	// Now is the clock a JWT's expiry is judged by, in JWT mode (nil:
	// time.Now); tests move it.
	Now func() time.Time
}

// State is what a restarted process needs to go on with the same model
// without training any batch twice. The training loop keeps it (through
// ResumeState) in the same store write that marks a step done.
type State struct {
	// SessionID is the session of the process that wrote the state
	// (for the record: a resumed trainer opens a session of its own).
	SessionID string `json:"session_id"`
	// ModelID is the trained model; a resumed trainer trains it on.
	ModelID string `json:"model_id"`
	// SeqID is the last seq_id sent for the model by a completed step;
	// the next step's requests are SeqID+1, SeqID+2, ….
	SeqID int64 `json:"seq_id"`
	// StatePath is the tinker:// path of the training state (weights and
	// optimizer) saved at the end of the last completed step, on a server
	// that answers client/config; a resumed trainer loads it into a fresh
	// model, as the SDK resumes. Empty on older servers: a resumed trainer
	// trains ModelID on.
	StatePath string `json:"state_path,omitempty"`
	// StepsTrained counts the steps trained; LastStep, Weights, Version
	// and Metrics are the last one's step, weights, policy version and
	// metrics, so that training it again answers what it answered.
	StepsTrained int                `json:"steps_trained"`
	LastStep     int                `json:"last_step"`
	Weights      string             `json:"weights"`
	Version      int64              `json:"version"`
	Metrics      map[string]float64 `json:"metrics,omitempty"`
}

// Trainer trains one role's LoRA adapter on a Tinker-compatible service.
type Trainer struct {
	opts  trainerbridge.Options
	cfg   Config
	c     *client
	where string // the URL, redacted, for errors
	log   *slog.Logger

	loss       string
	lossConfig map[string]float64
	adam       trainerbridge.AdamParams

	// server is what client/config said (found false: no such route);
	// maxDatums and maxBytes the limits in force; jsonWire is set when
	// forward_backward goes as JSON (a server without client/config, or
	// one that refused protobuf with 415).
	server              serverConfig
	maxDatums, maxBytes int

	mu       sync.Mutex
	st       State
	started  bool
	jsonWire bool

	stop      context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// New returns a Trainer for rawURL: tinker+http://HOST[:PORT][/PREFIX] or
// tinker+https://… (plain http and https are taken too). Routes are under
// PREFIX/api/v1. The API key is read from the environment variable
// o.APIKeyEnv (DefaultAPIKeyEnv) now; an empty one sends no key (open
// servers such as SkyRL's need none). Nothing is sent before Start.
func New(rawURL string, o trainerbridge.Options, cfg Config) (*Trainer, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("tinker URL %s: %w", redact.URL(rawURL), errors.Unwrap(err))
	}
	where := redact.URL(rawURL)
	switch u.Scheme {
	case "tinker+http", "http":
		u.Scheme = "http"
	case "tinker+https", "https":
		u.Scheme = "https"
	default:
		return nil, fmt.Errorf("tinker URL %s: scheme %q is not tinker+http or tinker+https", where, u.Scheme)
	}
	if u.User != nil {
		return nil, fmt.Errorf("tinker URL %s: credentials in the URL are not used; put the key in $%s", where, keyEnv(o))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("tinker URL %s: no host", where)
	}
	u.RawQuery, u.Fragment = "", ""
	if o.BaseModel == "" {
		return nil, errors.New("tinker: no base model")
	}
	t := &Trainer{opts: o, cfg: cfg, where: where, adam: o.Adam.WithDefaults()}
	switch o.Loss {
	case "", trainerbridge.LossImportanceSampling:
		t.loss = string(trainerbridge.LossImportanceSampling)
	case trainerbridge.LossPPO:
		low, high := o.ClipLow, o.ClipHigh
		if low == 0 {
			low = DefaultClip
		}
		if high == 0 {
			high = DefaultClip
		}
		if low < 0 || low > 1 || high < 0 {
			return nil, fmt.Errorf("tinker: ppo clip offsets %v and %v out of range (want 0 ≤ low ≤ 1, high ≥ 0)", low, high)
		}
		t.loss = string(trainerbridge.LossPPO)
		// The thresholds bound the probability ratio itself.
		t.lossConfig = map[string]float64{"clip_low_threshold": 1 - low, "clip_high_threshold": 1 + high}
	default:
		return nil, fmt.Errorf("tinker: unknown loss %q (want %s or %s)", o.Loss, trainerbridge.LossImportanceSampling, trainerbridge.LossPPO)
	}
	if t.opts.LoRARank == 0 {
		t.opts.LoRARank = DefaultLoRARank
	}
	if cfg.HeartbeatInterval <= 0 {
		t.cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	t.maxDatums, t.maxBytes = limit(0, cfg.MaxDatums, DefaultMaxDatums), limit(0, cfg.MaxBytes, DefaultMaxBytes)
	if cfg.SDKVersion == "" {
		t.cfg.SDKVersion = clientVersion()
	}
	t.log = cfg.Logger
	if t.log == nil {
		t.log = slog.Default()
	}
	t.log = t.log.With("trainer", where, "role", string(o.Role))
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	t.c = &client{
		base:    strings.TrimSuffix(u.String(), "/"),
		key:     os.Getenv(keyEnv(o)),
		keyEnv:  keyEnv(o),
		http:    hc,
		backoff: cfg.Backoff,
		retries: cfg.MaxRetries,
		poll:    cfg.PollTimeout,
	}
	if t.c.backoff == nil {
		t.c.backoff = DefaultBackoff
	}
	if t.c.retries <= 0 {
		t.c.retries = DefaultMaxRetries
	}
	if t.c.poll <= 0 {
		t.c.poll = DefaultPollTimeout
	}
	return t, nil
}

func keyEnv(o trainerbridge.Options) string {
	if o.APIKeyEnv != "" {
		return o.APIKeyEnv
	}
	return DefaultAPIKeyEnv
}

// State returns the trainer's resume state. It is safe for concurrent use.
func (t *Trainer) State() State {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.st
}

// Restore sets the state a previous process saved; call it before Start.
func (t *Trainer) Restore(s State) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started {
		return errors.New("tinker: restore after start")
	}
	if s.SeqID < 0 || s.StepsTrained < 0 {
		return fmt.Errorf("tinker: restore: negative seq_id %d or steps %d", s.SeqID, s.StepsTrained)
	}
	t.st = s
	return nil
}

// ResumeState returns State as JSON (trainerbridge.Resumer).
func (t *Trainer) ResumeState() ([]byte, error) { return json.Marshal(t.State()) }

// Resume restores JSON that ResumeState returned (trainerbridge.Resumer).
func (t *Trainer) Resume(state []byte) error {
	var s State
	if err := json.Unmarshal(state, &s); err != nil {
		return fmt.Errorf("tinker: resume state: %w", err)
	}
	return t.Restore(s)
}

// limit is the server's limit (def when it gives none), or ours when
// that is smaller.
func limit(server, ours, def int) int {
	n := def
	if server > 0 {
		n = server
	}
	if ours > 0 && ours < n {
		n = ours
	}
	return n
}

// Start asks client/config for the server's flags (the SDK's first
// request), checks that the service serves the base model
// (ErrUnknownModel otherwise), opens a session and starts its heartbeats,
// then creates the LoRA model. With a restored state it resumes as the SDK
// does: a fresh model into which the state's last saved training state is
// loaded (load_weights with the optimizer); a state without one (saved
// against a server without client/config) reuses its model, checked with
// get_info.
func (t *Trainer) Start(ctx context.Context) error {
	t.mu.Lock()
	if t.started {
		t.mu.Unlock()
		return errors.New("tinker: started twice")
	}
	t.mu.Unlock()
	sc, err := t.fetchConfig(ctx)
	if err != nil {
		return err
	}
	t.server = sc
	t.maxDatums, t.maxBytes = limit(sc.MaxDatums, t.cfg.MaxDatums, DefaultMaxDatums), limit(sc.MaxBytes, t.cfg.MaxBytes, DefaultMaxBytes)
	if err := t.checkModel(ctx); err != nil {
		return err
	}
	sessionID, err := t.createSession(ctx)
	if err != nil {
		return err
	}
	hctx, stop := context.WithCancel(context.Background())
	t.mu.Lock()
	t.started = true
	t.jsonWire = !sc.found
	t.st.SessionID = sessionID
	t.stop = stop
	st := t.st
	t.mu.Unlock()
	t.wg.Add(1)
	go t.heartbeat(hctx, sessionID)

	if st.ModelID != "" && (st.StatePath == "" || !sc.found) {
		return t.checkRestored(ctx, st.ModelID)
	}
	id, err := t.createModel(ctx, sessionID)
	if err != nil {
		return err
	}
	seq := int64(0)
	if st.StatePath != "" {
		if err := t.loadState(ctx, id, st.StatePath); err != nil {
			return err
		}
		seq = 1
	}
	t.mu.Lock()
	t.st.ModelID, t.st.SeqID = id, seq
	t.mu.Unlock()
	if st.StatePath != "" {
		t.log.Info("tinker model resumed", "model_id", id, "loaded", st.StatePath, "into", "a fresh model", "old_model_id", st.ModelID, "steps_trained", st.StepsTrained)
		return nil
	}
	t.log.Info("tinker model created", "model_id", id, "base_model", t.opts.BaseModel)
	return nil
}

// loadState sends load_weights {path, optimizer: true} as the new model's
// first request (seq_id 1): the SDK's load_state_with_optimizer.
func (t *Trainer) loadState(ctx context.Context, modelID, path string) error {
	body, err := json.Marshal(map[string]any{"model_id": modelID, "path": path, "optimizer": true, "seq_id": 1, "type": "load_weights"})
	if err != nil {
		return err
	}
	var res struct {
		Path string `json:"path"`
	}
	if _, err := t.c.submit(ctx, "load_weights", body, &res); err != nil {
		return fmt.Errorf("tinker %s: resume: load_weights %s into %s: %w", t.where, path, modelID, err)
	}
	return nil
}

// checkModel asks get_server_capabilities for the served base models. A
// server without the route (404, 405) is not checked here; create_model
// reports the model then.
func (t *Trainer) checkModel(ctx context.Context) error {
	var caps struct {
		SupportedModels []struct {
			ModelName string `json:"model_name"`
		} `json:"supported_models"`
	}
	err := t.c.call(ctx, http.MethodGet, "get_server_capabilities", nil, &caps)
	if code := httpretry.Code(err); code == http.StatusNotFound || code == http.StatusMethodNotAllowed {
		t.log.Warn("tinker server has no get_server_capabilities; base model not checked before create_model", "status", code)
		return nil
	}
	if err != nil {
		return fmt.Errorf("tinker %s: %w", t.where, err)
	}
	var names []string
	for _, m := range caps.SupportedModels {
		if m.ModelName == t.opts.BaseModel {
			return nil
		}
		names = append(names, m.ModelName)
	}
	return fmt.Errorf("tinker %s: %w: %q (served: %s)", t.where, trainerbridge.ErrUnknownModel, t.opts.BaseModel, strings.Join(names, ", "))
}

func (t *Trainer) metadata() map[string]string {
	return map[string]string{"client": "mgrpo", "run": t.opts.Run, "role": string(t.opts.Role)}
}

func (t *Trainer) createSession(ctx context.Context) (string, error) {
	tags := []string{"mgrpo"}
	if t.opts.Role != "" {
		tags = append(tags, string(t.opts.Role))
	}
	body, err := json.Marshal(map[string]any{
		"tags":          tags,
		"user_metadata": t.metadata(),
		"sdk_version":   t.cfg.SDKVersion,
		"type":          "create_session",
	})
	if err != nil {
		return "", err
	}
	var resp struct {
		SessionID      string `json:"session_id"`
		InfoMessage    string `json:"info_message"`
		WarningMessage string `json:"warning_message"`
		ErrorMessage   string `json:"error_message"`
	}
	if err := t.c.call(ctx, http.MethodPost, "create_session", body, &resp); err != nil {
		return "", fmt.Errorf("tinker %s: %w", t.where, err)
	}
	if resp.ErrorMessage != "" {
		return "", fmt.Errorf("tinker %s: %w: create_session: %s", t.where, trainerbridge.ErrRejected, t.c.redact(resp.ErrorMessage))
	}
	if resp.WarningMessage != "" {
		t.log.Warn("tinker create_session", "warning", t.c.redact(resp.WarningMessage))
	}
	if resp.SessionID == "" {
		return "", fmt.Errorf("tinker %s: %w: create_session answered no session_id", t.where, trainerbridge.ErrRejected)
	}
	return resp.SessionID, nil
}

func (t *Trainer) createModel(ctx context.Context, sessionID string) (string, error) {
	seed := t.opts.Seed
	body, err := json.Marshal(map[string]any{
		"session_id":    sessionID,
		"model_seq_id":  0, // the session's first (and only) model
		"base_model":    t.opts.BaseModel,
		"user_metadata": t.metadata(),
		"lora_config": map[string]any{
			"rank":          t.opts.LoRARank,
			"seed":          seed,
			"train_unembed": !t.cfg.FreezeUnembed,
			"train_mlp":     !t.cfg.FreezeMLP,
			"train_attn":    !t.cfg.FreezeAttn,
		},
		"type": "create_model",
	})
	if err != nil {
		return "", err
	}
	var res struct {
		ModelID string `json:"model_id"`
	}
	ref, err := t.c.submit(ctx, "create_model", body, &res)
	if err != nil {
		return "", fmt.Errorf("tinker %s: %w", t.where, err)
	}
	if res.ModelID == "" {
		// SkyRL names the model in create_model's answer already.
		res.ModelID = ref.ModelID
	}
	if res.ModelID == "" {
		return "", fmt.Errorf("tinker %s: %w: create_model gave no model_id", t.where, trainerbridge.ErrRejected)
	}
	return res.ModelID, nil
}

// checkRestored asks get_info about a restored model: it must exist and
// be of the configured base model (the SDK's model_data.model_name;
// SkyRL's model_data.base_model).
func (t *Trainer) checkRestored(ctx context.Context, id string) error {
	body, err := json.Marshal(map[string]string{"model_id": id, "type": "get_info"})
	if err != nil {
		return err
	}
	var info struct {
		ModelName string `json:"model_name"`
		ModelData struct {
			ModelName string `json:"model_name"`
			BaseModel string `json:"base_model"`
		} `json:"model_data"`
	}
	if err := t.c.call(ctx, http.MethodPost, "get_info", body, &info); err != nil {
		return fmt.Errorf("tinker %s: resume model %s: %w", t.where, id, err)
	}
	for _, name := range []string{info.ModelData.ModelName, info.ModelData.BaseModel, info.ModelName} {
		if name != "" && name != t.opts.BaseModel {
			return fmt.Errorf("tinker %s: resume model %s: %w: it is of %q, configured %q", t.where, id, trainerbridge.ErrRejected, name, t.opts.BaseModel)
		}
	}
	t.log.Info("tinker model resumed", "model_id", id, "seq_id", t.State().SeqID)
	return nil
}

// heartbeat keeps the session alive until Close. A failed heartbeat is
// logged and the next one tried on time.
func (t *Trainer) heartbeat(ctx context.Context, sessionID string) {
	defer t.wg.Done()
	body, _ := json.Marshal(map[string]string{"session_id": sessionID, "type": "session_heartbeat"})
	tick := time.NewTicker(t.cfg.HeartbeatInterval)
	defer tick.Stop()
	failed := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		hctx, cancel := context.WithTimeout(ctx, t.cfg.HeartbeatInterval)
		_, err := t.c.do(hctx, http.MethodPost, "session_heartbeat", body, nil)
		cancel()
		switch {
		case err == nil:
			failed = 0
		case ctx.Err() != nil:
			return
		default:
			failed++
			t.log.Warn("tinker session heartbeat failed", "session_id", sessionID, "consecutive", failed, "err", err)
		}
	}
}

// Close stops the heartbeats and releases idle connections. It is
// idempotent. The session then expires on the server's side (the API has
// no call to end it).
func (t *Trainer) Close() error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		stop := t.stop
		t.mu.Unlock()
		if stop != nil {
			stop()
		}
		t.wg.Wait()
		t.c.http.CloseIdleConnections()
	})
	return nil
}

// checkpointName is the save_weights_for_sampler name of a batch: its
// idempotency key in the characters SkyRL accepts ([A-Za-z0-9_-], at most
// 255), so a replayed step saves under the same name.
func checkpointName(key string) string {
	b := []byte(key)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	name := string(b)
	if len(name) > 200 {
		h := fnv.New64a()
		h.Write([]byte(key))
		name = fmt.Sprintf("%s-%016x", name[len(name)-150:], h.Sum64())
	}
	return name
}
