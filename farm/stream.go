package farm

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mgrpo/mgrpo/internal/pool"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// DefaultMaxExtraDraws is the per-step cap on draws replacing discarded
// groups (Training.MaxExtraDraws 0): one per query of the batch, so a
// streamed step draws at most twice its BatchSize.
func DefaultMaxExtraDraws(batch int) int { return batch }

// draw is one numbered draw of a streamed run: a query and its K seeds.
// Draw n (from 1) asks task (n−1) mod len(tasks) with the seeds
// RolloutSeed(seed, n, query, k); its rollout tasks carry n as their step.
type draw struct {
	n    int
	plan stepPlan
	// trained is how many steps were trained when it started; due is the
	// last step that may train it (trained + MaxStaleness + 1).
	trained, due int
	started      time.Time
	digests      []resultDigest
	// results hold the finished rollouts without a store.
	results []*RolloutResult
	have    int
	// seq orders the completed draws (0: not complete).
	seq int
}

// unitDone is one finished rollout of a draw.
type unitDone struct {
	d       *draw
	k       int
	digest  resultDigest
	result  *RolloutResult
	failure string
	err     error
}

// streamer is the step policy of a streamed run (Training.StreamGroups):
// its state, owned by the pipeline's goroutine.
//
// Admission: draw n starts while draws started − groups discarded ≤
// (S + trained steps + 1)·B, AReaL's rule over draws, and at most one
// step's worth beyond the run's Steps·B. A draw started with T steps
// trained is due by step T+S+1: steps take their B groups earliest due
// first (ties in completion order), and a step ships only when the draws
// left unassigned can all still make their deadlines (for every m ≥ 0, at
// most m·B of them due by step t+m); so every group is trained at most S
// steps after the last trained step when it started, the bound in trained
// steps of fixed steps. The admission rule keeps that schedule feasible
// (at most (S+1)·B draws unassigned) and bounds what is held: the results
// of at most (S+1)·B draws, and a trainer that falls behind stops the
// draws.
type streamer struct {
	f   *Farm
	fin *finisher
	// shipped is the highest step whose manifest is recorded.
	shipped int
	next    int
	// assigned are the draws in a step's manifest (groups or discarded).
	assigned map[int]bool
	active   map[int]*draw
	seq      int
	// The step being filled: its discarded draws and whether the cap was
	// reached.
	discarded []int
	capped    bool
	// rebuild are the steps of a resumed run whose manifest is recorded
	// and whose files are not written, by step; relaunched says the draws
	// in flight when the run stopped were started again (after them), and
	// maxAssigned is the highest draw of a recorded manifest.
	rebuild     map[int]streamManifest
	relaunched  bool
	maxAssigned int

	// units are the queued rollouts, run on group's slots by dispatch.
	units        chan func(context.Context)
	done         chan unitDone
	group        *pool.Group
	stopDispatch context.CancelFunc
	dispatched   chan struct{}
}

// newStreamedSteps returns the streamed policy of a run and starts its
// dispatcher.
func newStreamedSteps(ctx context.Context, f *Farm, fin *finisher) stepPolicy {
	B, K := f.cfg.BatchSize, f.cfg.GroupSize
	S := fin.staleness
	s := &streamer{f: f, fin: fin, next: 1, assigned: map[int]bool{}, active: map[int]*draw{}, rebuild: map[int]streamManifest{}}
	capacity := (S+2)*B*K + K
	s.units = make(chan func(context.Context), capacity)
	s.done = make(chan unitDone, capacity)
	s.group = f.pool.NewGroup(ctx, f.cfg.Grace, func(cause error) error {
		return fmt.Errorf("streamed run over: %w", cause)
	})
	dispatchCtx, stopDispatch := context.WithCancel(ctx)
	s.stopDispatch = stopDispatch
	s.dispatched = make(chan struct{})
	go func() {
		defer close(s.dispatched)
		s.dispatch(dispatchCtx)
	}()
	return s
}

// form returns step: rebuilt from its manifest (a resumed run), or else
// once the draws have filled it.
func (s *streamer) form(ctx context.Context, step int) ([]stepRollouts, error) {
	if m, ok := s.rebuild[step]; ok {
		delete(s.rebuild, step)
		r, err := s.rebuilt(ctx, m)
		if err != nil {
			return nil, err
		}
		return []stepRollouts{r}, nil
	}
	if err := s.relaunch(ctx); err != nil {
		return nil, err
	}
	for {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("streamed run interrupted before step %d: %w", s.shipped+1, context.Cause(ctx))
		}
		trained, changed, failure := s.fin.state()
		if failure != nil {
			return nil, failure
		}
		for s.admits(trained) {
			if err := s.start(ctx, trained); err != nil {
				return nil, err
			}
		}
		if chosen, ok := s.choose(trained); ok {
			r, err := s.ship(ctx, chosen)
			if err != nil {
				return nil, err
			}
			return []stepRollouts{r}, nil
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case u := <-s.done:
			if err := s.finished(u); err != nil {
				return nil, err
			}
		}
	}
}

// flush starts again the draws of a resumed run in flight when it stopped
// if no step was left to form (they are abandoned by stop, as the run is
// over); a streamed step is returned by form as soon as it is filled.
func (s *streamer) flush(ctx context.Context) ([]stepRollouts, error) {
	return nil, s.relaunch(ctx)
}

// stop stops the dispatcher and ends the rollouts in flight: with err
// after the grace period at most, without it at once.
func (s *streamer) stop(err error) {
	s.stopDispatch()
	s.drain(err)
	s.group.Abandon(fmt.Errorf("streamed run over: %w", cmp.Or(err, context.Canceled)))
	<-s.dispatched
	s.group.Wait()
	s.group.Close()
}

// dispatch starts the queued rollouts in order as slots free up.
func (s *streamer) dispatch(ctx context.Context) {
	for {
		var run func(context.Context)
		select {
		case <-ctx.Done():
			return
		case run = <-s.units:
		}
		if s.group.Go(func(unitCtx context.Context) {
			s.f.cfg.Metrics.started()
			run(unitCtx)
		}) != nil {
			return
		}
	}
}

// drain waits for the rollouts in flight (their results go to the store
// for a resumed run), for at most the grace period when the run failed or
// was interrupted (err); when it finishes, the rest are cancelled by the
// caller.
func (s *streamer) drain(err error) {
	if err == nil {
		return
	}
	s.group.Stop(err)
	if !s.group.Drain() {
		s.f.log.Warn("streamed run: rollouts abandoned after the grace period", "abandoned", s.group.Running(), "grace", s.f.cfg.Grace)
	}
}

// admits reports whether another draw may start with trained steps
// trained.
func (s *streamer) admits(trained int) bool {
	B, S := s.f.cfg.BatchSize, s.fin.staleness
	admitted := s.shipped*B + len(s.active)
	return admitted < (S+trained+1)*B && admitted < (s.f.cfg.Steps+1)*B
}

// newDraw returns draw n at the current versions.
func (s *streamer) newDraw(n, trained int) *draw {
	f := s.f
	K := f.cfg.GroupSize
	t := f.tasks[(n-1)%len(f.tasks)]
	version, executorVersion := f.policyVersions()
	p := stepPlan{step: n, tasks: []Task{t}, policyVersion: version, executorVersion: executorVersion, restarts: new(atomic.Int64)}
	for k := range K {
		p.units = append(p.units, rollout.RolloutTask{Run: f.cfg.Run, Step: n, QueryID: t.ID, K: k,
			Seed: rollout.RolloutSeed(f.cfg.Seed, n, t.ID, k), PolicyVersion: version, ExecutorPolicyVersion: executorVersion})
	}
	return &draw{n: n, plan: p, trained: trained, due: trained + s.fin.staleness + 1, started: time.Now(),
		digests: make([]resultDigest, K), results: make([]*RolloutResult, K)}
}

// start starts the next draw not yet assigned to a step.
func (s *streamer) start(ctx context.Context, trained int) error {
	for s.assigned[s.next] || s.active[s.next] != nil {
		s.next++
	}
	d := s.newDraw(s.next, trained)
	s.next++
	if s.f.st != nil {
		if err := s.f.st.putDrawRecord(ctx, s.f.cfg.Run, d.n, drawRecord{Trained: trained}); err != nil {
			return err
		}
	}
	return s.launch(ctx, d)
}

// launch makes d active and queues its rollouts, those a resumed run has
// not stored already.
func (s *streamer) launch(ctx context.Context, d *draw) error {
	f := s.f
	s.active[d.n] = d
	have := map[string]resultDigest{}
	if f.st != nil {
		var err error
		if have, err = f.st.drawDigests(ctx, f.cfg.Run, d.n); err != nil {
			return err
		}
	}
	for k, u := range d.plan.units {
		dg, ok := have[u.ID()]
		if ok && !(dg.Infra && dg.Retries < f.cfg.Failures.RolloutRetries) {
			d.digests[k] = dg
			d.have++
			continue
		}
		// Not stored, or stored as an infra failure with retries left: a
		// resumed run retries it rather than keep it as a zero.
		prior := dg
		s.units <- func(unitCtx context.Context) {
			var put func(context.Context, *RolloutResult) error
			if f.st != nil {
				put = func(ctx context.Context, r *RolloutResult) error { return f.st.putDrawResult(ctx, d.n, r) }
			}
			r := executeWithRetries(unitCtx, ctx, f.cfg.Failures, prior, f.cfg.Metrics, f.log, f.pendingRetries(put)(unitCtx), func(c context.Context) RolloutResult {
				return f.executeUnit(c, d.plan, k)
			})
			out := unitDone{d: d, k: k, digest: digestOf(&r), failure: firstLine(r.Error)}
			if f.st != nil {
				out.err = f.st.putDrawResult(unitCtx, d.n, &r)
			} else {
				out.result = &r
			}
			s.done <- out
		}
	}
	if len(have) > 0 {
		f.log.Info("draw resumed: rollouts already done are kept", "draw", d.n, "done", d.have, "rollouts", len(d.plan.units))
	}
	if d.have == len(d.plan.units) {
		s.complete(d)
	}
	return nil
}

// finished takes one finished rollout.
func (s *streamer) finished(u unitDone) error {
	f := s.f
	f.cfg.Metrics.finished(u.digest.Failed, u.digest.kind())
	if u.err != nil {
		return fmt.Errorf("draw %d: %w", u.d.n, u.err)
	}
	if u.digest.Failed {
		f.log.Warn("rollout failed", "rollout", u.d.plan.units[u.k].ID(), "error", u.failure)
	}
	d := u.d
	d.digests[u.k] = u.digest
	d.results[u.k] = u.result
	d.have++
	if f.cfg.OnProgress != nil {
		p := Progress{Step: s.shipped + 1, Total: f.cfg.BatchSize * f.cfg.GroupSize}
		var sum float64
		for _, a := range s.active {
			for _, dg := range a.digests[:a.have] {
				p.Done++
				sum += dg.Main
				p.Drifts, p.HistoryEdits = p.Drifts+dg.Drifts, p.HistoryEdits+dg.HistoryEdits
				if dg.Failed {
					p.Errors++
				}
			}
		}
		if p.Done > 0 {
			p.MeanReward = sum / float64(p.Done)
		}
		p.Done = min(p.Done, p.Total)
		f.progress(p)
	}
	if d.have == len(d.plan.units) {
		s.complete(d)
	}
	return nil
}

// complete marks d's group in; with DropZeroVariance a group whose main
// rewards are all equal is discarded (until the step's cap), and another
// draw takes its place.
func (s *streamer) complete(d *draw) {
	s.seq++
	d.seq = s.seq
	infra := s.f.cfg.Failures.excludes() && anyInfra(d.digests)
	if !infra && (!s.f.cfg.DropZeroVariance || !zeroVariance(d.digests)) {
		return
	}
	limit := cmp.Or(s.f.cfg.Training.MaxExtraDraws, DefaultMaxExtraDraws(s.f.cfg.BatchSize))
	if len(s.discarded) >= limit {
		s.capped = true
		return
	}
	s.discarded = append(s.discarded, d.n)
	delete(s.active, d.n)
	s.assigned[d.n] = true
	if infra {
		s.f.log.Info("group discarded: a rollout is still an infra failure after its retries", "draw", d.n, "query", d.plan.tasks[0].ID, "step", s.shipped+1, "discarded", len(s.discarded))
		return
	}
	s.f.log.Info("group discarded: its main rewards are all equal", "draw", d.n, "query", d.plan.tasks[0].ID, "step", s.shipped+1, "discarded", len(s.discarded))
}

// anyInfra reports whether a rollout of a group is still an infra failure.
func anyInfra(ds []resultDigest) bool {
	for _, d := range ds {
		if d.Infra {
			return true
		}
	}
	return false
}

// zeroVariance reports whether every rollout of a group has the same main
// reward.
func zeroVariance(ds []resultDigest) bool {
	for _, d := range ds[1:] {
		if d.Main != ds[0].Main {
			return false
		}
	}
	return true
}

// choose returns the next step's groups, earliest due first, when B are
// in and the draws left can all still make their deadlines; or, when no
// rollout is in flight to wait for, whatever B groups are in (a deadline
// then missed is found by the staleness check at training).
func (s *streamer) choose(trained int) ([]*draw, bool) {
	B := s.f.cfg.BatchSize
	t := s.shipped + 1
	var in []*draw
	for _, d := range s.active {
		if d.seq > 0 {
			in = append(in, d)
		}
	}
	if len(in) < B {
		return nil, false
	}
	slices.SortFunc(in, func(a, b *draw) int { return cmp.Or(cmp.Compare(a.due, b.due), cmp.Compare(a.seq, b.seq)) })
	var chosen []*draw
	queries := map[string]bool{}
	for _, d := range in {
		if q := d.plan.tasks[0].ID; !queries[q] && len(chosen) < B {
			queries[q] = true
			chosen = append(chosen, d)
		}
	}
	if len(chosen) < B {
		if len(in) < len(s.active) || s.admits(trained) {
			return nil, false
		}
		// Nothing is in flight and nothing may start: the groups in ask
		// fewer than B distinct queries (a task list short for the
		// staleness window), so the step holds a query twice.
		s.f.log.Warn("streamed step holds a query twice: too few tasks for the draws in flight", "step", t, "tasks", len(s.f.tasks))
		for _, d := range in {
			if len(chosen) < B && !slices.Contains(chosen, d) {
				chosen = append(chosen, d)
			}
		}
	}
	var rest []int
	for _, d := range s.active {
		if !slices.Contains(chosen, d) {
			rest = append(rest, d.due)
		}
	}
	slices.Sort(rest)
	for i, due := range rest {
		if i+1 > (due-t)*B {
			if len(in) == len(s.active) {
				s.f.log.Warn("streamed step shipped with a draw past its deadline left over (the batch would hold a query twice)", "step", t, "due", due)
				break
			}
			return nil, false
		}
	}
	slices.SortFunc(chosen, func(a, b *draw) int { return cmp.Compare(a.seq, b.seq) })
	return chosen, true
}

// ship records the manifest of the next step and returns it, for the
// pipeline to assemble, write and train.
func (s *streamer) ship(ctx context.Context, chosen []*draw) (stepRollouts, error) {
	f := s.f
	t := s.shipped + 1
	m := streamManifest{Step: t, Discarded: s.discarded, Capped: s.capped}
	m.PolicyVersion, m.ExecutorPolicyVersion = chosen[0].plan.policyVersion, chosen[0].plan.executorVersion
	for _, d := range chosen {
		// A group of equal rewards that completed once the cap was
		// reached counts toward the batch.
		m.Capped = m.Capped || (f.cfg.DropZeroVariance && zeroVariance(d.digests))
		m.Draws = append(m.Draws, d.n)
		m.PolicyVersion = min(m.PolicyVersion, d.plan.policyVersion)
		m.ExecutorPolicyVersion = min(m.ExecutorPolicyVersion, d.plan.executorVersion)
	}
	if f.st != nil {
		if err := f.st.putManifest(ctx, f.cfg.Run, m, len(chosen)*f.cfg.GroupSize); err != nil {
			return stepRollouts{}, err
		}
	}
	for _, d := range chosen {
		delete(s.active, d.n)
		s.assigned[d.n] = true
	}
	s.discarded, s.capped = nil, false
	return s.assemble(m, chosen), nil
}

// assemble returns the step of manifest m from its draws.
func (s *streamer) assemble(m streamManifest, draws []*draw) stepRollouts {
	f := s.f
	s.shipped = m.Step
	plan := stepPlan{step: m.Step, policyVersion: m.PolicyVersion, executorVersion: m.ExecutorPolicyVersion, restarts: new(atomic.Int64)}
	var digests []resultDigest
	start := time.Now()
	for _, d := range draws {
		plan.tasks = append(plan.tasks, d.plan.tasks...)
		plan.units = append(plan.units, d.plan.units...)
		plan.restarts.Add(d.plan.restarts.Load())
		digests = append(digests, d.digests...)
		if d.started.Before(start) {
			start = d.started
		}
	}
	f.log.Info("streamed step ships", "step", m.Step, "draws", m.Draws, "discarded", len(m.Discarded), "policy_version", m.PolicyVersion, "executor_policy_version", m.ExecutorPolicyVersion)
	f.cfg.Metrics.stepStarted(m.PolicyVersion)
	rolloutTime := time.Since(start)
	f.cfg.Metrics.phaseDone(PhaseRollout, rolloutTime)
	return stepRollouts{plan: plan, results: streamResults{st: f.st, draws: draws, group: f.cfg.GroupSize}, digests: digests,
		start: start, rolloutTime: rolloutTime, manifest: &m}
}

// resume takes up a streamed run found in the store: the draws of the
// recorded manifests are assigned, and the steps whose manifest is
// recorded and whose files are not written are rebuilt from it by form.
// The draws started and not in any manifest are started again, with the
// deadlines they had (their stored rollouts kept), by relaunch once the
// rebuilt steps are formed.
func (s *streamer) resume(ctx context.Context, written map[int]store.StepRecord) error {
	f := s.f
	if f.st == nil {
		return nil
	}
	if err := f.st.detectLegacyDraws(ctx, f.cfg.Run); err != nil {
		return err
	}
	for step := 1; step <= f.cfg.Steps; step++ {
		m, ok, err := f.st.manifest(ctx, f.cfg.Run, step)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		for _, n := range append(slices.Clone(m.Draws), m.Discarded...) {
			s.assigned[n] = true
			s.maxAssigned = max(s.maxAssigned, n)
		}
		if _, ok := written[step]; ok {
			s.shipped = step
			continue
		}
		s.rebuild[step] = m
	}
	return nil
}

// rebuilt returns the step of manifest m from its draws' stored results.
func (s *streamer) rebuilt(ctx context.Context, m streamManifest) (stepRollouts, error) {
	f := s.f
	f.log.Info("streamed step rebuilt from its manifest", "step", m.Step, "draws", m.Draws)
	draws := make([]*draw, len(m.Draws))
	for i, n := range m.Draws {
		d := s.newDraw(n, 0)
		have, err := f.st.drawDigests(ctx, f.cfg.Run, n)
		if err != nil {
			return stepRollouts{}, err
		}
		for k, u := range d.plan.units {
			dg, ok := have[u.ID()]
			if !ok {
				return stepRollouts{}, fmt.Errorf("resume: step %d's manifest names draw %d, whose result %s is not in the store", m.Step, n, u.ID())
			}
			d.digests[k] = dg
		}
		draws[i] = d
	}
	return s.assemble(m, draws), nil
}

// relaunch starts again, once, the draws of a resumed run that were
// started and are in no manifest.
func (s *streamer) relaunch(ctx context.Context) error {
	f := s.f
	if f.st == nil || s.relaunched {
		return nil
	}
	s.relaunched = true
	for n := 1; ; n++ {
		if s.assigned[n] {
			continue
		}
		rec, ok, err := f.st.drawRecord(ctx, f.cfg.Run, n)
		if err != nil {
			return err
		}
		if !ok {
			if n > s.maxAssigned {
				return nil
			}
			continue
		}
		d := s.newDraw(n, rec.Trained)
		f.log.Info("draw in flight when the run stopped: redone", "draw", n, "due_step", d.due)
		if err := s.launch(ctx, d); err != nil {
			return err
		}
	}
}
