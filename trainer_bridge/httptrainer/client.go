// Package httptrainer is the trainer backend for the generic batch API of
// docs/trainer-api.md, for users who wrap their own trainer (verl,
// OpenRLHF, a custom FSDP loop) in a small HTTP service. Its URLs are
// http://HOST[:PORT][/PREFIX] and https://…, with optional query
// parameters step_timeout, poll_wait, poll_interval, retries and gzip (see
// FromURL).
//
// A step is a job: the client posts the batch under its idempotency key,
// the service answers as soon as it has accepted it, and the client polls
// until the job is done. A lost answer, a proxy's timeout or a crash of
// either side is therefore harmless: posting the same key again returns
// the same job, never a second training.
package httptrainer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	retryablehttp "github.com/hashicorp/go-retryablehttp"

	"github.com/mgrpo/mgrpo/internal/httpretry"
	"github.com/mgrpo/mgrpo/internal/redact"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

func init() {
	open := func(_ context.Context, u *url.URL, o trainerbridge.Options) (trainerbridge.Trainer, error) {
		cfg, err := FromURL(u, o)
		if err != nil {
			return nil, err
		}
		return New(cfg)
	}
	trainerbridge.Register("http", open)
	trainerbridge.Register("https", open)
}

// DefaultAPIKeyEnv is the environment variable read for the bearer token
// when Options.APIKeyEnv is empty.
const DefaultAPIKeyEnv = "MGRPO_TRAINER_API_KEY"

// The defaults of Config's zero fields.
const (
	DefaultRetryMax       = 8
	DefaultRetryWaitMin   = 500 * time.Millisecond
	DefaultRetryWaitMax   = 30 * time.Second
	DefaultAttemptTimeout = 10 * time.Minute
	DefaultPollWait       = 20 * time.Second
	DefaultPollInterval   = 2 * time.Second
	DefaultStepTimeout    = 2 * time.Hour
)

// maxAnswer caps the answers read: job states and errors are small.
const maxAnswer = 4 << 20

// Config configures a Trainer.
type Config struct {
	// URL is the service's base URL; the API's paths are appended to it.
	URL string
	// APIKey is sent as a bearer token when not empty. It never appears in
	// logs or errors.
	APIKey string
	// Options are the role's trainer options.
	Options trainerbridge.Options

	// RetryMax is the number of retries of one request (0: DefaultRetryMax;
	// negative: none), waiting per Backoff (default DefaultBackoff) between
	// RetryWaitMin and RetryWaitMax; CheckRetry decides which failures are
	// retried (default httpretry.DefaultCheckRetry).
	RetryMax                   int
	RetryWaitMin, RetryWaitMax time.Duration
	CheckRetry                 retryablehttp.CheckRetry
	Backoff                    retryablehttp.Backoff

	// AttemptTimeout bounds one attempt of a start or step upload.
	AttemptTimeout time.Duration
	// PollWait is how long the service may hold a poll open waiting for the
	// job (its long-poll wait); a poll attempt times out 30 s after it.
	PollWait time.Duration
	// PollInterval is the shortest time between the starts of two polls,
	// for services that answer polls at once.
	PollInterval time.Duration
	// StepTimeout bounds the wait for one step, upload included. When it
	// passes, Train returns ErrUnavailable; the service may still finish the
	// job, and a Train of the same batch resumes waiting for it.
	StepTimeout time.Duration
	// NoGzip sends step bodies uncompressed even to a service that accepts
	// gzip.
	NoGzip bool

	// Transport carries the requests (nil: a pooled transport of its own).
	Transport http.RoundTripper
	// Logger receives one line per step and per retry (nil: discarded).
	Logger *slog.Logger
}

// FromURL returns the Config for a trainer URL, reading the API key from
// the environment variable o.APIKeyEnv (DefaultAPIKeyEnv when empty). A
// named variable that is unset or empty is an error; an unset default
// means no key. Query parameters set Config fields and are removed from
// the base URL: step_timeout, poll_wait and poll_interval (durations),
// retries (a count), gzip (false to send plain JSON).
func FromURL(u *url.URL, o trainerbridge.Options) (Config, error) {
	cfg := Config{Options: o}
	q := u.Query()
	for name, target := range map[string]*time.Duration{"step_timeout": &cfg.StepTimeout, "poll_wait": &cfg.PollWait, "poll_interval": &cfg.PollInterval} {
		if v := q.Get(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return cfg, fmt.Errorf("query parameter %s=%q: want a positive duration", name, v)
			}
			*target = d
		}
		q.Del(name)
	}
	if v := q.Get("retries"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return cfg, fmt.Errorf("query parameter retries=%q: want a count", v)
		}
		cfg.RetryMax = n
		if n == 0 {
			cfg.RetryMax = -1
		}
	}
	q.Del("retries")
	if v := q.Get("gzip"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return cfg, fmt.Errorf("query parameter gzip=%q: want true or false", v)
		}
		cfg.NoGzip = !on
	}
	q.Del("gzip")
	base := *u
	base.RawQuery = q.Encode()
	base.Fragment = ""
	cfg.URL = base.String()

	env := o.APIKeyEnv
	if env == "" {
		env = DefaultAPIKeyEnv
	}
	cfg.APIKey = os.Getenv(env)
	if cfg.APIKey == "" && o.APIKeyEnv != "" {
		return cfg, fmt.Errorf("environment variable %s (the trainer's API key) is empty", env)
	}
	return cfg, nil
}

// Trainer is a client of one role's trainer service.
type Trainer struct {
	cfg    Config
	base   *url.URL
	upload *retryablehttp.Client
	poll   *retryablehttp.Client
	log    *slog.Logger

	started   bool
	gzip      bool
	closeOnce sync.Once
}

var _ trainerbridge.Trainer = (*Trainer)(nil)

// New returns a Trainer for cfg; it makes no request.
func New(cfg Config) (*Trainer, error) {
	base, err := url.Parse(cfg.URL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("trainer URL %q: want http://HOST or https://HOST", redact.URL(cfg.URL))
	}
	if base.User != nil {
		return nil, fmt.Errorf("trainer URL %s: credentials in the URL are not supported; set the API key's environment variable", redact.URL(cfg.URL))
	}
	base.Path = strings.TrimSuffix(base.Path, "/")
	switch {
	case cfg.RetryMax == 0:
		cfg.RetryMax = DefaultRetryMax
	case cfg.RetryMax < 0:
		cfg.RetryMax = 0
	}
	cfg.RetryWaitMin = or(cfg.RetryWaitMin, DefaultRetryWaitMin)
	cfg.RetryWaitMax = or(cfg.RetryWaitMax, DefaultRetryWaitMax)
	cfg.AttemptTimeout = or(cfg.AttemptTimeout, DefaultAttemptTimeout)
	cfg.PollWait = or(cfg.PollWait, DefaultPollWait)
	cfg.PollInterval = or(cfg.PollInterval, DefaultPollInterval)
	cfg.StepTimeout = or(cfg.StepTimeout, DefaultStepTimeout)
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Trainer{cfg: cfg, base: base, log: log}
	t.upload = t.client(cfg.AttemptTimeout)
	t.poll = t.client(cfg.PollWait + 30*time.Second)
	if cfg.Transport == nil {
		t.poll.HTTPClient.Transport = t.upload.HTTPClient.Transport
	}
	return t, nil
}

func or(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// client returns a retrying client whose attempts time out after timeout.
func (t *Trainer) client(timeout time.Duration) *retryablehttp.Client {
	c := retryablehttp.NewClient()
	if t.cfg.Transport != nil {
		c.HTTPClient.Transport = t.cfg.Transport
	}
	c.HTTPClient.Timeout = timeout
	c.Logger = nil
	t.cfg.policy().Configure(c)
	c.ErrorHandler = retryablehttp.PassthroughErrorHandler
	c.RequestLogHook = func(_ retryablehttp.Logger, r *http.Request, attempt int) {
		if attempt > 0 {
			t.log.Warn("trainer request retried", "role", t.cfg.Options.Role, "method", r.Method, "path", r.URL.Path, "attempt", attempt)
		}
	}
	return c
}

// Start posts the role's configuration to /v1/start. A base model the
// service does not serve is ErrUnknownModel. It may be called again (the
// service resumes the role's model).
func (t *Trainer) Start(ctx context.Context) error {
	o := t.cfg.Options
	req := startRequest{APIVersion: APIVersion, Run: o.Run, Role: o.Role, BaseModel: o.BaseModel, LoRARank: o.LoRARank,
		Seed: o.Seed, Loss: loss(o.Loss), ClipLow: clip(o.ClipLow), ClipHigh: clip(o.ClipHigh), Adam: o.Adam.WithDefaults(),
		Temperature: o.WireTemperature()}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("start trainer: %w", err)
	}
	status, answer, err := t.do(ctx, t.upload, http.MethodPost, "/v1/start", nil, body, nil)
	if err != nil {
		return fmt.Errorf("start trainer: %w", err)
	}
	if status != http.StatusOK {
		return fmt.Errorf("start trainer: %w", t.statusError(http.MethodPost, "/v1/start", status, answer))
	}
	var res startResponse
	if err := json.Unmarshal(answer, &res); err != nil {
		return fmt.Errorf("start trainer: %w: malformed answer: %v", trainerbridge.ErrUnavailable, err)
	}
	t.started, t.gzip = true, res.AcceptsGzip && !t.cfg.NoGzip
	t.log.Info("trainer started", "role", o.Role, "base_model", o.BaseModel, "version", res.Version, "gzip", t.gzip)
	return nil
}

func loss(l trainerbridge.Loss) trainerbridge.Loss {
	if l == "" {
		return trainerbridge.LossImportanceSampling
	}
	return l
}

func clip(c float64) float64 {
	if c == 0 {
		return 0.2
	}
	return c
}

// Train posts b as a step job and waits for it (see the package
// documentation). A job the service failed, or a batch it refused (4xx),
// is ErrRejected with the service's message; a service that stays
// unreachable, or a step not done within StepTimeout, is ErrUnavailable.
func (t *Trainer) Train(ctx context.Context, b trainerbridge.Batch) (trainerbridge.StepResult, error) {
	key := b.IdempotencyKey()
	if !t.started {
		return trainerbridge.StepResult{}, fmt.Errorf("train step %s: Train before Start", key)
	}
	if o := t.cfg.Options; o.Role != "" && b.Role != o.Role {
		return trainerbridge.StepResult{}, fmt.Errorf("train step %s: %w: a batch of role %s for the %s trainer", key, trainerbridge.ErrRejected, b.Role, o.Role)
	}
	o := t.cfg.Options
	h := stepHeader{Key: key, Run: b.Run, Role: b.Role, Step: b.Step, PolicyVersion: b.PolicyVersion,
		Loss: loss(o.Loss), ClipLow: clip(o.ClipLow), ClipHigh: clip(o.ClipHigh), Adam: o.Adam.WithDefaults(),
		Temperature: o.WireTemperature()}
	began := time.Now()
	body, err := encodeBody(h, b, t.gzip)
	if err != nil {
		return trainerbridge.StepResult{}, fmt.Errorf("train step %s: %w: %v", key, trainerbridge.ErrRejected, err)
	}
	sctx, cancel := context.WithTimeout(ctx, t.cfg.StepTimeout)
	defer cancel()
	res, err := t.run(sctx, key, body)
	if err != nil {
		if ctx.Err() == nil && sctx.Err() != nil {
			err = fmt.Errorf("%w: not done after %v (step_timeout); the trainer may still finish it, and training the same batch again waits for it", trainerbridge.ErrUnavailable, t.cfg.StepTimeout)
		}
		return trainerbridge.StepResult{}, fmt.Errorf("train step %s: %w", key, err)
	}
	t.log.Info("trainer step done", "role", b.Role, "step", b.Step, "version", res.Version, "body_bytes", len(body), "seconds", time.Since(began).Seconds())
	return res, nil
}

// run submits the job and polls it until it is done or failed; a job the
// service no longer knows is submitted again.
func (t *Trainer) run(ctx context.Context, key string, body []byte) (trainerbridge.StepResult, error) {
	st, err := t.submit(ctx, key, body)
	for err == nil {
		switch st.Status {
		case statusDone:
			if st.Result == nil {
				return trainerbridge.StepResult{}, fmt.Errorf("%w: a done job without a result", trainerbridge.ErrUnavailable)
			}
			return trainerbridge.StepResult{Weights: st.Result.Weights, Version: st.Result.Version, Metrics: st.Result.Metrics}, nil
		case statusFailed:
			msg := "no message"
			if st.Error != nil {
				msg = t.redact(st.Error.Message)
			}
			return trainerbridge.StepResult{}, fmt.Errorf("%w: the trainer failed the step: %s", trainerbridge.ErrRejected, msg)
		case statusQueued, statusRunning:
		default:
			return trainerbridge.StepResult{}, fmt.Errorf("%w: job status %q", trainerbridge.ErrUnavailable, st.Status)
		}
		began := time.Now()
		var found bool
		st, found, err = t.pollJob(ctx, key)
		if err == nil && !found {
			t.log.Warn("trainer lost the step job; submitting it again", "role", t.cfg.Options.Role)
			st, err = t.submit(ctx, key, body)
		}
		if err == nil && st.Status != statusDone && st.Status != statusFailed {
			if err = sleep(ctx, t.cfg.PollInterval-time.Since(began)); err != nil {
				break
			}
		}
	}
	return trainerbridge.StepResult{}, err
}

// submit posts the step body under key.
func (t *Trainer) submit(ctx context.Context, key string, body []byte) (jobState, error) {
	hdr := http.Header{"Idempotency-Key": {key}, "Content-Type": {"application/json"}}
	if t.gzip {
		hdr.Set("Content-Encoding", "gzip")
	}
	status, answer, err := t.do(ctx, t.upload, http.MethodPost, "/v1/steps", nil, body, hdr)
	if err != nil {
		return jobState{}, err
	}
	switch status {
	case http.StatusOK, http.StatusCreated, http.StatusAccepted:
		return t.decodeJob(key, answer)
	}
	return jobState{}, t.statusError(http.MethodPost, "/v1/steps", status, answer)
}

// pollJob asks for the job of key, letting the service hold the request
// up to PollWait; found is false when the service does not know the key.
func (t *Trainer) pollJob(ctx context.Context, key string) (st jobState, found bool, err error) {
	q := url.Values{"key": {key}, "wait": {strconv.FormatFloat(t.cfg.PollWait.Seconds(), 'f', -1, 64)}}
	status, answer, err := t.do(ctx, t.poll, http.MethodGet, "/v1/steps", q, nil, nil)
	if err != nil {
		return st, false, err
	}
	switch status {
	case http.StatusOK:
		st, err = t.decodeJob(key, answer)
		return st, err == nil, err
	case http.StatusNotFound:
		return st, false, nil
	}
	return st, false, t.statusError(http.MethodGet, "/v1/steps", status, answer)
}

func (t *Trainer) decodeJob(key string, answer []byte) (jobState, error) {
	var st jobState
	if err := json.Unmarshal(answer, &st); err != nil {
		return st, fmt.Errorf("%w: malformed job state: %v", trainerbridge.ErrUnavailable, err)
	}
	if st.Key != "" && st.Key != key {
		return st, fmt.Errorf("%w: the answer is about job %q, not %q", trainerbridge.ErrUnavailable, st.Key, key)
	}
	return st, nil
}

// do sends one request, with retries, and returns the final answer's
// status and body. Exhausted retries on a failing connection, and a
// failure to read the answer, are ErrUnavailable.
func (t *Trainer) do(ctx context.Context, c *retryablehttp.Client, method, path string, q url.Values, body []byte, hdr http.Header) (int, []byte, error) {
	u := *t.base
	u.Path += path
	u.RawQuery = q.Encode()
	var rb any
	if body != nil {
		rb = body
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, method, u.String(), rb)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if t.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.cfg.APIKey)
	}
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		return 0, nil, fmt.Errorf("%s %s: %w: %s", method, path, trainerbridge.ErrUnavailable, t.redact(err.Error()))
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w: reading the answer: %s", method, path, trainerbridge.ErrUnavailable, t.redact(err.Error()))
	}
	return resp.StatusCode, answer, nil
}

// statusError classifies an error answer, an *httpretry.StatusError whose
// message is the answer's error member ("code: message") or the start of a
// body of another shape: unknown_model is ErrUnknownModel, other 4xx
// answers ErrRejected and the rest (5xx after the retries) ErrUnavailable.
func (t *Trainer) statusError(method, path string, status int, answer []byte) error {
	var code, msg string
	var eb errorBody
	if json.Unmarshal(answer, &eb) == nil && eb.Error != nil {
		code, msg = eb.Error.Code, eb.Error.Message
	} else {
		msg = snippet(answer)
	}
	if code != "" {
		msg = code + ": " + msg
	}
	se := httpretry.NewStatusError(status, nil, msg, t.cfg.APIKey)
	sentinel := trainerbridge.ErrUnavailable
	switch {
	case code == "unknown_model":
		sentinel = trainerbridge.ErrUnknownModel
	case status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests:
		sentinel = trainerbridge.ErrRejected
	}
	return fmt.Errorf("%w: %s %s: %w", sentinel, method, path, se)
}

func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

func (t *Trainer) redact(s string) string { return redact.Secrets(s, t.cfg.APIKey) }

// Close releases the client's idle connections; it may be called any
// number of times. Jobs on the service are not cancelled.
func (t *Trainer) Close() error {
	t.closeOnce.Do(func() {
		t.upload.HTTPClient.CloseIdleConnections()
		t.poll.HTTPClient.CloseIdleConnections()
	})
	return nil
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
