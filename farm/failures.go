package farm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/failure"
)

// InfraPolicy is what a step does with a group holding a rollout that is
// still an infra failure after its retries.
type InfraPolicy string

// The infra policies.
const (
	// InfraExclude keeps the group out of the step's batches (its
	// advantages would be taken over an incomplete group) and counts it.
	InfraExclude InfraPolicy = "exclude"
	// InfraZero trains the failed rollout as a zero reward with an invalid
	// format, as every failure was trained before the classes existed.
	InfraZero InfraPolicy = "zero"
)

// ParseInfraPolicy parses exclude or zero.
func ParseInfraPolicy(s string) (InfraPolicy, error) {
	switch p := InfraPolicy(strings.ToLower(strings.TrimSpace(s))); p {
	case InfraExclude, InfraZero:
		return p, nil
	}
	return "", fmt.Errorf("unknown infra failure policy %q (want exclude or zero)", s)
}

// Default failure settings (run.Config's defaults).
const (
	DefaultRolloutRetries        = 2
	DefaultMaxToolOutageFraction = 0.5
	DefaultMaxFailedFraction     = 0.5
	// DefaultRetryWait is the wait before a rollout's first retry; each
	// further retry waits twice as long, up to MaxRetryWait.
	DefaultRetryWait = time.Second
	MaxRetryWait     = 30 * time.Second
)

// FailurePolicy says what the farm does with rollouts that failed for
// reasons that say nothing about the policy (failure.KindInfra). Its zero
// value is the behaviour from before the failure classes: no retries,
// every failure trained as a zero, no step stopped.
type FailurePolicy struct {
	// RolloutRetries is how many times an infra rollout runs again, with
	// the same task and seed (0: never).
	RolloutRetries int
	// RetryWait is the wait before the first retry, doubled at each
	// further one up to MaxRetryWait (0: DefaultRetryWait).
	RetryWait time.Duration
	// TaintToolOutages makes a rollout whose tool calls hit provider
	// outages on more than MaxToolOutageFraction of its calls an infra
	// failure (CauseToolOutage).
	TaintToolOutages      bool
	MaxToolOutageFraction float64
	// OnInfra is what a step does with a group whose rollout is still
	// infra after its retries ("" is InfraZero).
	OnInfra InfraPolicy
	// StopWhenUseless stops the run, without writing the step, when every
	// rollout of a step failed or more than MaxFailedFraction of them are
	// still infra failures after their retries (ErrUselessStep).
	StopWhenUseless   bool
	MaxFailedFraction float64
}

// excludes reports whether infra groups leave the batch.
func (p FailurePolicy) excludes() bool { return p.OnInfra == InfraExclude }

// retryWait is the wait before retry n (1-based).
func (p FailurePolicy) retryWait(n int) time.Duration {
	w := p.RetryWait
	if w <= 0 {
		w = DefaultRetryWait
	}
	for i := 1; i < n && w < MaxRetryWait; i++ {
		w *= 2
	}
	return min(w, MaxRetryWait)
}

// validate reports settings out of range.
func (p FailurePolicy) validate(add func(string, ...any)) {
	if p.RolloutRetries < 0 {
		add("Failures.RolloutRetries %d: must not be negative", p.RolloutRetries)
	}
	if p.RetryWait < 0 {
		add("Failures.RetryWait %v: must not be negative", p.RetryWait)
	}
	if f := p.MaxToolOutageFraction; !(f >= 0 && f <= 1) {
		add("Failures.MaxToolOutageFraction %v: must be in [0, 1]", f)
	}
	if f := p.MaxFailedFraction; !(f >= 0 && f <= 1) {
		add("Failures.MaxFailedFraction %v: must be in [0, 1]", f)
	}
	if p.OnInfra != "" {
		if _, err := ParseInfraPolicy(string(p.OnInfra)); err != nil {
			add("Failures.OnInfra: %v", err)
		}
	}
}

// classify sets r's failure kind, cause and endpoint and its tool outage
// count from its tree and scores: a failed rollout takes its planner's
// class (a runner that panicked or returned nothing, runnerFailed, is
// infra); a rollout that did not fail but one of whose executors or judges
// met an infra failure is infra too, since its rewards rest on what did
// not answer. Tool outages are only counted here (see taint).
func classify(r *RolloutResult, runnerFailed bool) {
	r.FailureKind, r.FailureCause, r.FailureEndpoint = "", "", ""
	r.ToolOutages, r.toolCalls = toolOutages(r.Tree)
	set := func(tr *agents.Trajectory) bool {
		if tr == nil || tr.FailureKind == "" {
			return false
		}
		r.FailureKind, r.FailureCause, r.FailureEndpoint = tr.FailureKind, tr.FailureCause, tr.FailureEndpoint
		return true
	}
	switch {
	case runnerFailed:
		r.FailureKind, r.FailureCause = failure.KindInfra, failure.CauseRunnerPanic
		return
	case r.Error != "":
		if !set(r.Tree.Planner) {
			cause := failure.CauseOther
			if r.Planner.SequenceError != "" && r.Tree.Planner.Error == "" {
				cause = failure.CauseSequenceAssembly
			}
			r.FailureKind, r.FailureCause = failure.KindOf(cause), cause
		}
		if r.FailureKind == failure.KindInfra {
			return
		}
	}
	for _, e := range r.Tree.Executors {
		if e != nil && e.FailureKind == failure.KindInfra {
			set(e)
			return
		}
	}
	if judgeFailed(r) {
		r.FailureKind, r.FailureCause, r.FailureEndpoint = failure.KindInfra, failure.CauseJudge, ""
	}
}

// taint makes r an infra failure (CauseToolOutage) when p taints tool
// outages and r's tool calls hit outages on more than the allowed
// fraction of its calls; a rollout already infra keeps its cause.
func taint(r *RolloutResult, p FailurePolicy) {
	if !p.TaintToolOutages || r.infra() || r.ToolOutages == 0 {
		return
	}
	if float64(r.ToolOutages) > p.MaxToolOutageFraction*float64(r.toolCalls) {
		r.FailureKind, r.FailureCause, r.FailureEndpoint = failure.KindInfra, failure.CauseToolOutage, outageEndpoint(r.Tree)
	}
}

// outageEndpoint names the tool (and its provider) of a tree's first tool
// outage.
func outageEndpoint(tree *agents.Rollout) string {
	for _, tr := range append([]*agents.Trajectory{tree.Planner}, tree.Executors...) {
		if tr == nil {
			continue
		}
		for _, st := range tr.Steps {
			for _, c := range st.Calls {
				if c.Name != agents.ToolDelegate && failure.IsToolOutage(c.Meta.Class) {
					if c.Meta.Provider != "" {
						return fmt.Sprintf("tool %s (provider %s)", c.Meta.Tool, c.Meta.Provider)
					}
					return "tool " + c.Meta.Tool
				}
			}
		}
	}
	return ""
}

// judgeFailed reports whether the answer's or an executor's judge failed
// (after its own retries): the rollout's rewards then rest on a 0 the
// judge never gave.
func judgeFailed(r *RolloutResult) bool {
	if r.Scores.ScoreError != "" {
		return true
	}
	for _, s := range r.Scores.Subs {
		if s.ExpertError != "" {
			return true
		}
	}
	return false
}

// toolOutages counts the tool calls of a tree that hit an outage of their
// provider, and all its tool calls; the planner's delegations are not
// tool calls of a provider (an executor's own failure is classified with
// its trajectory).
func toolOutages(tree *agents.Rollout) (outages, calls int) {
	count := func(tr *agents.Trajectory) {
		if tr == nil {
			return
		}
		for _, st := range tr.Steps {
			for _, c := range st.Calls {
				if c.Name == agents.ToolDelegate {
					continue
				}
				calls++
				if failure.IsToolOutage(c.Meta.Class) {
					outages++
				}
			}
		}
	}
	count(tree.Planner)
	for _, e := range tree.Executors {
		count(e)
	}
	return outages, calls
}

// infra reports whether r is an infra failure.
func (r *RolloutResult) infra() bool { return r.FailureKind == failure.KindInfra }

// executeWithRetries runs a rollout with run and runs it again while it
// is an infra failure and its retries (p.RolloutRetries, of which prior
// were used by earlier processes: a resumed run) are not used up, waiting
// between attempts. No retry starts once stop ends (the run is shutting
// down): the result is then kept as it is, its retries left for a resumed
// run. Each retry's cause is kept in the result. pending, when not nil, is
// given each infra result about to be retried, its retries and causes so
// far set, before the wait: a worker stores it as a pending retry, so that
// a rollout taken up by another process continues its count.
func executeWithRetries(ctx, stop context.Context, p FailurePolicy, prior resultDigest, m *Metrics, log interface {
	Info(string, ...any)
}, pending func(*RolloutResult), run func(context.Context) RolloutResult) RolloutResult {
	r := run(ctx)
	taint(&r, p)
	r.Retries = prior.Retries
	var causes []string
	endpoint := ""
	if prior.Infra {
		// A resumed run retries what an earlier process stored as infra.
		causes = append(slices.Clone(prior.RetryCauses), prior.Cause)
		endpoint = prior.Endpoint
		r.Retries++
	}
	for r.infra() && r.Retries < p.RolloutRetries && stop.Err() == nil && ctx.Err() == nil {
		if pending != nil {
			r.RetryCauses, r.RetryEndpoint = slices.Clone(causes), endpoint
			pending(&r)
		}
		causes = append(causes, r.FailureCause)
		endpoint = r.FailureEndpoint
		n := r.Retries + 1
		log.Info("rollout retried: infra failure", "rollout", r.Task.ID(), "cause", r.FailureCause, "endpoint", r.FailureEndpoint, "retry", n, "of", p.RolloutRetries)
		m.retried(r.FailureCause)
		t := time.NewTimer(p.retryWait(n))
		select {
		case <-stop.Done():
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		if stop.Err() != nil || ctx.Err() != nil {
			break
		}
		r = run(ctx)
		taint(&r, p)
		r.Retries = n
	}
	r.RetryCauses, r.RetryEndpoint = causes, endpoint
	return r
}

// ErrUselessStep is the error of a run stopped because a step could not be
// useful (FailurePolicy.StopWhenUseless): every rollout failed, or too many
// are still infra failures after their retries. The step is not written;
// the run resumes once the cause is fixed.
var ErrUselessStep = errors.New("step not written: it cannot be useful")

// checkUseful returns an ErrUselessStep error when step's rollouts
// (digests) make it useless under p: every one failed, or more than
// MaxFailedFraction are still infra failures. The error names the
// commonest cause and its endpoint and says how to go on.
func checkUseful(p FailurePolicy, step int, digests []resultDigest) error {
	if !p.StopWhenUseless || len(digests) == 0 {
		return nil
	}
	failed, infra := 0, 0
	type key struct{ cause, endpoint string }
	count := map[key]int{}
	var top key
	for _, d := range digests {
		if d.Failed || d.Infra {
			failed++
		}
		if d.Infra {
			infra++
		}
		if d.Failed || d.Infra {
			k := key{d.Cause, d.Endpoint}
			if k.cause == "" {
				k.cause = failure.CauseOther
			}
			count[k]++
			if c := count[k]; c > count[top] || c == count[top] && (k.cause < top.cause || k.cause == top.cause && k.endpoint < top.endpoint) {
				top = k
			}
		}
	}
	n := len(digests)
	var why string
	switch {
	case failed == n:
		why = fmt.Sprintf("all %d rollouts failed", n)
	case float64(infra) > p.MaxFailedFraction*float64(n):
		why = fmt.Sprintf("%d of %d rollouts are still infra failures after %d retries (more than --max-failed-fraction %g)", infra, n, p.RolloutRetries, p.MaxFailedFraction)
	default:
		return nil
	}
	where := ""
	if top.endpoint != "" {
		where = " at " + top.endpoint
	}
	return fmt.Errorf("rollout step %d: %w: %s; commonest cause %s%s (%d rollouts); fix it and continue the run with the same command and --resume (the written steps are kept)",
		step, ErrUselessStep, why, top.cause, where, count[top])
}

// pendingRetries returns what executeWithRetries gives each infra result
// about to be retried in this process: with a store, the result is stored
// under its pending-retry key (put: putResult for a step's rollouts,
// putDrawResult for a streamed draw's), as a worker stores it. A
// coordinator killed hard (SIGKILL, a lost machine) in the middle of a
// rollout's retries then leaves its count in the store, and the resumed
// run continues it (the digests of the step or draw take in pending
// retries) instead of starting it from 0: no rollout gets more than
// --rollout-retries retries across processes. Nil without a store (a run
// in memory cannot resume) or without retries.
func (f *Farm) pendingRetries(put func(context.Context, *RolloutResult) error) func(context.Context) func(*RolloutResult) {
	if f.st == nil || f.cfg.Failures.RolloutRetries == 0 {
		return func(context.Context) func(*RolloutResult) { return nil }
	}
	return func(ctx context.Context) func(*RolloutResult) {
		return func(r *RolloutResult) {
			if err := put(ctx, r); err != nil {
				f.log.Warn("storing a pending retry failed; a resumed run would count the rollout's retries from the last one stored", "rollout", r.Task.ID(), "error", err)
			}
		}
	}
}
