// Package weightsync brings a role's newly trained weights to every
// inference endpoint of that role's pool after an optimizer step, and
// checks that each endpoint serves them before the next rollouts start.
//
// Three kinds of sync exist (New's kind):
//
//   - "sglang": POST /update_weights_from_disk with model_path and
//     weight_version on every endpoint (optionally between
//     /pause_generation and /continue_generation), verified with
//     GET /get_weight_version;
//   - "vllm": POST /pause, the configured update action (an HTTP call or
//     a command), POST /reset_prefix_cache, POST /resume; these routes
//     exist only when vLLM runs with VLLM_SERVER_DEV_MODE=1. Verified when
//     Options.VersionPath names a route reporting the version;
//   - "none": the trainer pushes the weights itself; the sync only waits
//     for the endpoints to report the version when Options.VersionPath is
//     set.
//
// A weights-path template (Options.PathTemplate) maps the trainer's
// weights reference to what the servers load; see the Placeholder
// constants. The whole pool is updated concurrently and must all succeed:
// a weight update cannot be rolled back, so when one endpoint fails the
// pool may serve two versions, and Sync's *SyncError says which endpoint
// is on which so the run can stop with that in its message.
//
// docs/weight-sync.md describes each kind, what the servers need and the
// errors.
package weightsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// Kinds of weight sync.
const (
	KindSGLang = "sglang"
	KindVLLM   = "vllm"
	KindNone   = "none"
)

// Kinds lists the kinds New accepts.
var Kinds = []string{KindSGLang, KindVLLM, KindNone}

// Syncer updates one role's inference pool to new weights.
type Syncer interface {
	// Sync loads the trainer's weights reference ref (StepResult.Weights)
	// for role's step as policy version on every endpoint of the pool,
	// concurrently, and returns nil once each endpoint has taken them and,
	// where the kind can check, reports version. Any failure returns a
	// *SyncError naming each failed endpoint, the stage that failed, and
	// the version every endpoint is on. Syncing the same ref and version
	// again is harmless (servers reload the same weights). Calls must not
	// overlap; ctx bounds the whole sync.
	Sync(ctx context.Context, role, ref string, version int64, step int) error
	// Check verifies, changing nothing, that every endpoint can be synced:
	// it is reachable, serves the routes the kind needs (vLLM's dev mode)
	// and reports its version where the kind reads one. Sync runs it
	// first, so that a misconfigured endpoint fails the sync before any
	// endpoint is changed; run it at start too, before any rollout. A
	// failure is a *SyncError with Preflight set.
	Check(ctx context.Context) error
	// Kind returns the syncer's kind (KindSGLang, KindVLLM, KindNone).
	Kind() string
	// Endpoints returns the pool's base URLs, credentials redacted.
	Endpoints() []string
}

// Defaults of Options' zero fields.
const (
	DefaultPathTemplate   = "{ref}"
	DefaultRetryFor       = 2 * time.Minute
	DefaultAttemptTimeout = 10 * time.Minute
	DefaultVerifyFor      = 10 * time.Second
	DefaultCommandTimeout = 10 * time.Minute
)

// Options configures a Syncer. The zero value (plus a vLLM update action
// for kind vllm) is usable.
type Options struct {
	// PathTemplate maps the trainer's weights reference to the path the
	// servers load (default "{ref}": the reference itself), e.g.
	// "/mnt/ckpt/{role}/step-{step}". Placeholders: {ref}, {name},
	// {role}, {step}, {version}; {step:6} pads to six digits.
	PathTemplate string
	// APIKey, when set, is sent as "Authorization: Bearer KEY" (the
	// servers' --api-key). It is never logged.
	APIKey string
	// Client sends the requests (default: a client with no overall
	// timeout; AttemptTimeout bounds each attempt).
	Client *http.Client
	// AttemptTimeout bounds one HTTP attempt (default 10 min: loading a
	// large checkpoint takes minutes).
	AttemptTimeout time.Duration
	// RetryFor bounds the time one call keeps retrying transient failures
	// (default 2 min); CheckRetry and Backoff decide what is retried and
	// how long to wait (defaults httpretry.DefaultCheckRetry and 250 ms
	// doubling per retry up to 5 s, or the answer's Retry-After).
	RetryFor   time.Duration
	CheckRetry retryablehttp.CheckRetry
	Backoff    retryablehttp.Backoff
	// VerifyFor is how long an endpoint may take to report the new
	// version before the sync fails (default 10 s; for kind none, where
	// the trainer pushes the weights in its own time, set it longer).
	VerifyFor time.Duration
	// VersionPath is the GET route that reports the served version as
	// {"weight_version": …}. SGLang's default tries /get_weight_version,
	// /weight_version, /model_info and /get_model_info in turn (servers
	// have moved it); for vllm and none it is empty by default, which
	// skips verification (recent vLLM dev builds serve /weight_info).
	VersionPath string

	// Pause wraps each endpoint's update between SGLang's
	// /pause_generation and /continue_generation (kind sglang; vLLM always
	// pauses). PauseMode is the mode sent: SGLang abort, retract or
	// in_place; vLLM abort, wait or keep (empty: the server's default,
	// abort on both).
	Pause     bool
	PauseMode string
	// LoadFormat is SGLang's load_format (empty: the server's default).
	LoadFormat string
	// AbortAll sets SGLang's abort_all_requests: requests running when
	// the update arrives end with finish_reason "abort".
	AbortAll bool

	// Update is the vLLM update action, run on each endpoint between
	// /pause and /reset_prefix_cache. Required for kind vllm.
	Update UpdateAction
	// LabelVersion makes the vLLM sync POST /update_weight_version
	// {"new_version": …} after the update action, for servers whose
	// action does not set the version itself (recent vLLM dev builds).
	LabelVersion bool
	// CommandTimeout bounds an update command (default 10 min).
	CommandTimeout time.Duration

	// Logger receives one line per endpoint and stage (default: discard).
	Logger *slog.Logger
}

// UpdateAction is how a vLLM endpoint loads new weights: an HTTP call or
// a command, exactly one of the two. Its templates take every
// PathTemplate placeholder plus {path} (the expanded weights path) and
// {endpoint} (the endpoint's base URL, credentials redacted).
type UpdateAction struct {
	// Method (default POST) and Path of the HTTP call; Path is relative
	// to the endpoint ("/collective_rpc") or a full URL template. Body is
	// a JSON template: values are JSON-escaped where they are placed, so
	// `{"model_path": "{path}"}` stays valid JSON for any path. The call
	// succeeds on a 2xx whose JSON body, if any, has no "success": false.
	Method string
	Path   string
	Body   string
	// Command is an argv template run once per endpoint, without a shell,
	// e.g. ["/opt/bin/load-weights", "{endpoint}", "{path}"]. Exit status
	// 0 is success; otherwise the error carries the end of its output.
	// Commands are not retried.
	Command []string
}

func (a UpdateAction) isZero() bool { return a.Path == "" && len(a.Command) == 0 && a.Body == "" }

// Errors Sync wraps (test with errors.Is on the returned *SyncError).
var (
	// ErrDevMode: a vLLM control route answered 404, as vLLM does unless it
	// runs with VLLM_SERVER_DEV_MODE=1.
	ErrDevMode = errors.New("vLLM's dev routes are off: start the server with VLLM_SERVER_DEV_MODE=1")
	// ErrRejected: the server refused the update (a 4xx, success false):
	// retrying the same request cannot help. The error carries the
	// server's message.
	ErrRejected = errors.New("server rejected the weight update")
	// ErrUnavailable: the server could not be reached or kept failing
	// (connection refused, 5xx) for Options.RetryFor.
	ErrUnavailable = errors.New("server unavailable")
	// ErrNotVerified: the server took the update but did not report the
	// new version within Options.VerifyFor.
	ErrNotVerified = errors.New("server does not report the new weight version")
	// ErrNoWeights: the trainer gave no weights reference to load.
	ErrNoWeights = errors.New("the trainer reported no weights reference")
)

// New returns the Syncer of kind ("sglang", "vllm" or "none") for the
// pool's base URLs (e.g. http://10.0.0.5:30000, without /v1). It checks
// the options (templates, the vLLM update action) and reports every
// problem at once.
func New(kind string, endpoints []string, o Options) (Syncer, error) {
	o = o.withDefaults()
	var errs []error
	eps := make([]endpoint, 0, len(endpoints))
	for _, raw := range endpoints {
		ep, err := parseEndpoint(raw)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		eps = append(eps, ep)
	}
	pathT, err := parseTemplate(o.PathTemplate, pathPlaceholders)
	if err != nil {
		errs = append(errs, fmt.Errorf("weights path: %w", err))
	}
	b := &base{kind: kind, eps: eps, o: o, path: pathT, hc: &caller{o: o}}
	var s Syncer
	switch kind {
	case KindSGLang:
		if len(endpoints) == 0 {
			errs = append(errs, errors.New("no endpoints: give the role's SGLang base URLs"))
		}
		if o.PauseMode != "" && !contains([]string{"abort", "retract", "in_place"}, o.PauseMode) {
			errs = append(errs, fmt.Errorf("pause mode %q: SGLang takes abort, retract or in_place", o.PauseMode))
		}
		s = &sglang{base: b}
	case KindVLLM:
		if len(endpoints) == 0 {
			errs = append(errs, errors.New("no endpoints: give the role's vLLM base URLs"))
		}
		if o.PauseMode != "" && !contains([]string{"abort", "wait", "keep"}, o.PauseMode) {
			errs = append(errs, fmt.Errorf("pause mode %q: vLLM takes abort, wait or keep", o.PauseMode))
		}
		v := &vllm{base: b}
		if err := v.parseAction(); err != nil {
			errs = append(errs, err)
		}
		s = v
	case KindNone:
		s = &none{base: b}
	default:
		errs = append(errs, fmt.Errorf("unknown weight sync %q (want one of %s)", kind, strings.Join(Kinds, ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("weight sync %s: %w", kind, err)
	}
	return s, nil
}

func (o Options) withDefaults() Options {
	if o.PathTemplate == "" {
		o.PathTemplate = DefaultPathTemplate
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = DefaultAttemptTimeout
	}
	if o.RetryFor <= 0 {
		o.RetryFor = DefaultRetryFor
	}
	if o.VerifyFor <= 0 {
		o.VerifyFor = DefaultVerifyFor
	}
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = DefaultCommandTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// endpoint is one server of the pool.
type endpoint struct {
	base *url.URL // no trailing slash
	name string   // base, credentials redacted: what errors and logs show
}

func parseEndpoint(raw string) (endpoint, error) {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return endpoint{}, fmt.Errorf("endpoint %q: want an http:// or https:// base URL", redactRaw(raw))
	}
	u.Path = strings.TrimSuffix(u.Path, "/v1")
	return endpoint{base: u, name: u.Redacted()}, nil
}

// redactRaw hides a password in a URL that may not parse.
func redactRaw(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	if at := strings.LastIndex(raw, "@"); at >= 0 {
		return "…@" + raw[at+1:]
	}
	return raw
}

// url returns the endpoint's URL for route (a path, with any query).
func (e endpoint) url(route string) string {
	return e.base.String() + route
}
