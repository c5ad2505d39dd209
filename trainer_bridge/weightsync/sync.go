package weightsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Stages of an endpoint's sync, as EndpointError.Stage names them.
const (
	StagePause  = "pause"
	StageUpdate = "update"
	StageLabel  = "label version"
	StageReset  = "reset prefix cache"
	StageVerify = "verify"
	StageResume = "resume"
	StageCheck  = "check"
)

// EndpointError is one endpoint's failure in a sync.
type EndpointError struct {
	// Endpoint is the base URL, credentials redacted.
	Endpoint string
	// Stage is where it failed (StagePause, StageUpdate, …).
	Stage string
	Err   error
}

func (e *EndpointError) Error() string { return e.Endpoint + ": " + e.Stage + ": " + e.Err.Error() }

func (e *EndpointError) Unwrap() error { return e.Err }

// EndpointVersion is where one endpoint stands after a failed sync.
type EndpointVersion struct {
	Endpoint string
	// Updated is set when the endpoint took the new weights in this sync
	// (its update stage succeeded), whatever failed after.
	Updated bool
	// Version is the version the endpoint reports; "" when it could not
	// be read, with Note saying why.
	Version string
	Note    string
}

// SyncError is a failed Sync: which endpoints failed and where, and what
// every endpoint of the pool serves now.
type SyncError struct {
	Kind, Role string
	// Version is the version the sync was to reach.
	Version   int64
	Failed    []*EndpointError
	Endpoints []EndpointVersion
	// Preflight is set when the failure came from the check that runs on
	// every endpoint before any is changed: nothing was updated.
	Preflight bool
}

// Mixed reports whether the pool may now serve two versions: some
// endpoints took the new weights and some did not.
func (e *SyncError) Mixed() bool {
	var some, all = false, true
	for _, ep := range e.Endpoints {
		some = some || ep.Updated
		all = all && ep.Updated
	}
	return some && !all
}

func (e *SyncError) Error() string {
	var b strings.Builder
	switch {
	case e.Preflight && e.Role == "":
		fmt.Fprintf(&b, "weight sync (%s) check failed on %d of %d endpoints: ", e.Kind, len(e.Failed), len(e.Endpoints))
	case e.Preflight:
		fmt.Fprintf(&b, "weight sync (%s) of %s to version %d stopped before changing anything, the check failed on %d of %d endpoints: ", e.Kind, e.Role, e.Version, len(e.Failed), len(e.Endpoints))
	default:
		fmt.Fprintf(&b, "weight sync (%s) of %s to version %d failed on %d of %d endpoints: ", e.Kind, e.Role, e.Version, len(e.Failed), len(e.Endpoints))
	}
	for i, f := range e.Failed {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Error())
	}
	b.WriteString(". Endpoints now: ")
	for i, ep := range e.Endpoints {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(ep.Endpoint)
		switch {
		case ep.Version != "" && ep.Updated:
			b.WriteString(" on version " + ep.Version + ", updated")
		case ep.Version != "":
			b.WriteString(" on version " + ep.Version + ", not updated")
		case ep.Updated:
			fmt.Fprintf(&b, " took the version-%d weights, unverified (%s)", e.Version, ep.Note)
		default:
			b.WriteString(" on an unknown version, not updated (" + ep.Note + ")")
		}
	}
	switch {
	case e.Preflight:
		b.WriteString(". No endpoint was changed: the pool stays on its current weights")
	case e.Mixed():
		b.WriteString(". The pool mixes versions and a weight update cannot be rolled back: stop the run, fix the failing endpoints and resume from the last completed step")
	default:
		b.WriteString(". Stop the run, fix the failing endpoints and resume from the last completed step")
	}
	return b.String()
}

// Unwrap returns the endpoints' errors, so errors.Is finds ErrDevMode and
// the like.
func (e *SyncError) Unwrap() []error {
	out := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		out[i] = f
	}
	return out
}

// base is what every kind shares: the pool, the options, the caller.
type base struct {
	kind string
	eps  []endpoint
	o    Options
	path template
	hc   *caller

	mu           sync.Mutex
	versionRoute map[string]string // the version route that answered, per endpoint
}

func (b *base) Kind() string { return b.kind }

func (b *base) Endpoints() []string {
	out := make([]string, len(b.eps))
	for i, ep := range b.eps {
		out[i] = ep.name
	}
	return out
}

// target is one sync's parameters.
type target struct {
	role    string
	version int64
	want    string // the version as servers report it
	path    string // the expanded weights path
	vars    map[string]string
}

func (b *base) newTarget(role, ref string, version int64, step int) (target, error) {
	vars := templateVars(role, ref, version, step)
	t := target{role: role, version: version, want: strconv.FormatInt(version, 10), vars: vars}
	if ref == "" && (b.path.uses(PlaceholderRef) || b.path.uses(PlaceholderName)) {
		return t, fmt.Errorf("weight sync (%s) of %s to version %d: %w (step %d); check the trainer's StepResult.Weights", b.kind, role, version, ErrNoWeights, step)
	}
	t.path = b.path.expand(vars, nil)
	vars[PlaceholderPath] = t.path
	return t, nil
}

// progress is what one endpoint's sync reached.
type progress struct {
	updated bool
}

// checkFunc checks one endpoint can be synced, changing nothing.
type checkFunc func(ctx context.Context, ep endpoint) error

// check runs fn on every endpoint concurrently; a failure is a
// *SyncError with Preflight set. role and version only label the error.
func (b *base) check(ctx context.Context, role string, version int64, fn checkFunc) error {
	if fn == nil {
		return nil
	}
	failed := make([]*EndpointError, len(b.eps))
	var wg sync.WaitGroup
	for i, ep := range b.eps {
		wg.Go(func() {
			if err := fn(ctx, ep); err != nil {
				failed[i] = &EndpointError{Endpoint: ep.name, Stage: StageCheck, Err: err}
			}
		})
	}
	wg.Wait()
	se := &SyncError{Kind: b.kind, Role: role, Version: version, Preflight: true}
	for _, f := range failed {
		if f != nil {
			se.Failed = append(se.Failed, f)
		}
	}
	if len(se.Failed) == 0 {
		return nil
	}
	se.Endpoints = b.standing(ctx, make([]progress, len(b.eps)))
	return se
}

// syncFunc syncs one endpoint; it sets p.updated once the endpoint has
// taken the weights and returns the failed stage with the error.
type syncFunc func(ctx context.Context, ep endpoint, t target, p *progress) (stage string, err error)

// run applies one to every endpoint concurrently. Every endpoint is
// attempted to the end even when another fails: a sync cancelled half way
// would leave more of the pool in an unknown state.
func (b *base) run(ctx context.Context, t target, one syncFunc) error {
	failed := make([]*EndpointError, len(b.eps))
	prog := make([]progress, len(b.eps))
	var wg sync.WaitGroup
	for i, ep := range b.eps {
		wg.Go(func() {
			start := time.Now()
			stage, err := one(ctx, ep, t, &prog[i])
			if err != nil {
				failed[i] = &EndpointError{Endpoint: ep.name, Stage: stage, Err: err}
				b.o.Logger.Warn("weight sync failed", "kind", b.kind, "role", t.role, "version", t.version, "endpoint", ep.name, "stage", stage, "err", err)
				return
			}
			b.o.Logger.Info("weight sync done", "kind", b.kind, "role", t.role, "version", t.version, "endpoint", ep.name, "path", t.path, "seconds", time.Since(start).Seconds())
		})
	}
	wg.Wait()
	se := &SyncError{Kind: b.kind, Role: t.role, Version: t.version}
	for _, f := range failed {
		if f != nil {
			se.Failed = append(se.Failed, f)
		}
	}
	if len(se.Failed) == 0 {
		return nil
	}
	se.Endpoints = b.standing(ctx, prog)
	return se
}

// standing reads every endpoint's version for a failure report, with one
// quick attempt each.
func (b *base) standing(ctx context.Context, prog []progress) []EndpointVersion {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	quick := *b.hc
	quick.once = true
	quick.o.AttemptTimeout = 5 * time.Second
	out := make([]EndpointVersion, len(b.eps))
	var wg sync.WaitGroup
	for i, ep := range b.eps {
		wg.Go(func() {
			out[i] = EndpointVersion{Endpoint: ep.name, Updated: prog[i].updated}
			v, err := b.readVersion(ctx, &quick, ep)
			if err != nil {
				out[i].Note = err.Error()
				return
			}
			out[i].Version = v
		})
	}
	wg.Wait()
	return out
}

// errNoVersionRoute: the kind has no way to read the version.
var errNoVersionRoute = errors.New("no version route (set Options.VersionPath)")

// sglangVersionRoutes are where SGLang versions have reported the served
// weight version: /get_weight_version first, then the routes that
// replaced it.
var sglangVersionRoutes = []string{"/get_weight_version", "/weight_version", "/model_info", "/get_model_info"}

// versionRoutes are the routes readVersion tries for ep.
func (b *base) versionRoutes(ep endpoint) []string {
	if b.o.VersionPath != "" {
		return []string{b.o.VersionPath}
	}
	if b.kind != KindSGLang {
		return nil
	}
	b.mu.Lock()
	r, ok := b.versionRoute[ep.name]
	b.mu.Unlock()
	if ok {
		return []string{r}
	}
	return sglangVersionRoutes
}

// readVersion asks ep for the version it serves: a JSON body's
// weight_version (a string or a number) or, failing that, an
// X-Weight-Version header. Routes answering 404 are skipped.
func (b *base) readVersion(ctx context.Context, c *caller, ep endpoint) (string, error) {
	routes := b.versionRoutes(ep)
	if len(routes) == 0 {
		return "", errNoVersionRoute
	}
	var last error
	for _, route := range routes {
		rep, err := c.call(ctx, ep, "GET", route, nil)
		if isStatus(err, 404) {
			last = err
			continue
		}
		if err != nil {
			return "", err
		}
		v, err := versionOf(rep)
		if err != nil {
			return "", fmt.Errorf("GET %s%s: %w", ep.name, route, err)
		}
		if b.kind == KindSGLang && b.o.VersionPath == "" {
			b.mu.Lock()
			if b.versionRoute == nil {
				b.versionRoute = map[string]string{}
			}
			b.versionRoute[ep.name] = route
			b.mu.Unlock()
		}
		return v, nil
	}
	return "", fmt.Errorf("no version route answered (tried %s): %w", strings.Join(routes, ", "), last)
}

// versionOf reads the version of a version route's answer.
func versionOf(rep *reply) (string, error) {
	var body struct {
		WeightVersion json.RawMessage `json:"weight_version"`
	}
	if err := json.Unmarshal(rep.body, &body); err == nil && len(body.WeightVersion) > 0 && string(body.WeightVersion) != "null" {
		var s string
		if json.Unmarshal(body.WeightVersion, &s) == nil {
			return s, nil
		}
		var n json.Number
		if json.Unmarshal(body.WeightVersion, &n) == nil {
			return n.String(), nil
		}
		return "", fmt.Errorf("weight_version is %s, want a string or a number", body.WeightVersion)
	}
	if v := rep.header.Get("X-Weight-Version"); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("answer has no weight_version: %s", snippet(rep.body))
}

// verify polls ep until it reports t.want, for Options.VerifyFor.
func (b *base) verify(ctx context.Context, ep endpoint, t target) error {
	deadline := time.Now().Add(b.o.VerifyFor)
	wait := 50 * time.Millisecond
	for {
		got, err := b.readVersion(ctx, b.hc, ep)
		if err != nil {
			return err
		}
		if got == t.want {
			return nil
		}
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("%w: reports %q, want %q (waited %v)", ErrNotVerified, got, t.want, b.o.VerifyFor)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// cleanup returns a context for undoing a pause after a failure: it
// outlives ctx's cancellation by a few seconds, so a cancelled sync still
// resumes generation.
func cleanup(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
}
