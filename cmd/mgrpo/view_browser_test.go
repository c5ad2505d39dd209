package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mgrpo/mgrpo/rollout"
)

// chromiumPath is MGRPO_TEST_CHROMIUM; the test skips when it is unset.
func chromiumPath(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("MGRPO_TEST_CHROMIUM")
	if bin == "" {
		t.Skip("MGRPO_TEST_CHROMIUM is not set (path to a chromium binary); .ci/run sets it")
	}
	return bin
}

// browser starts headless Chromium from MGRPO_TEST_CHROMIUM, or skips.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1000),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, browserBudget(t))
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	return ctx
}

// browserBudget is how long a test may drive Chromium: what is left of the
// test binary's -timeout less a minute to report, at most ten minutes. A
// fixed short budget is a wall-clock assertion in disguise: on a loaded
// 2-core machine full-page screenshots alone take tens of seconds.
func browserBudget(t *testing.T) time.Duration {
	budget := 10 * time.Minute
	if deadline, ok := t.Deadline(); ok {
		budget = min(budget, time.Until(deadline)-time.Minute)
	}
	return max(budget, 30*time.Second)
}

// open navigates to u and waits until the element sel is visible.
func open(t *testing.T, ctx context.Context, u, sel string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("open %s: %v", u, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// text returns the visible text of the element sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

// screenshotDir is where the browser tests write their screenshots:
// MGRPO_TEST_SCREENSHOTS when set, else the test's temporary directory.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("MGRPO_TEST_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// shoot writes a full-page PNG of the current page.
func shoot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
}

// TestViewInBrowser renders the step list, a rollout tree and a token view
// of sim runs in headless Chromium and checks their numbers from the DOM.
func TestViewInBrowser(t *testing.T) {
	ctx := browser(t)
	shots := screenshotDir(t)
	dir := mustSimRun(t)
	srv := serveRun(t, dir)
	sums, err := rollout.ReadSummaries(filepath.Join(dir, rollout.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}

	// The step list.
	open(t, ctx, srv.URL+"/", "#steps")
	rewards := eval[[]string](t, ctx, `[...document.querySelectorAll('#steps td.reward')].map(e => e.textContent)`)
	accuracies := eval[[]string](t, ctx, `[...document.querySelectorAll('#steps td.accuracy')].map(e => e.textContent)`)
	plots := eval[int](t, ctx, `document.querySelectorAll('#plots svg.plot').length`)
	shoot(t, ctx, shots, "run")
	if len(rewards) != len(sums) {
		t.Fatalf("step list shows %d rewards, summary.jsonl has %d steps", len(rewards), len(sums))
	}
	for i, s := range sums {
		if rewards[i] != f3(s.MeanMainReward) || accuracies[i] != f3(s.Accuracy) {
			t.Errorf("step %d: DOM shows reward %s accuracy %s, want %s %s", s.Step, rewards[i], accuracies[i], f3(s.MeanMainReward), f3(s.Accuracy))
		}
	}
	if plots != 4 {
		t.Errorf("the run page shows %d plots, want 4 (rewards, accuracy, sub rewards, response length)", plots)
	}

	// A step page (queries with their K rollouts).
	stats, err := rollout.ReadStatsJSONL(filepath.Join(rollout.StepDir(dir, 1), rollout.StatsFile))
	if err != nil {
		t.Fatal(err)
	}
	open(t, ctx, srv.URL+"/step/1", "table.rollouts")
	stepRewards := eval[[]string](t, ctx, `[...document.querySelectorAll('table.rollouts td.reward')].map(e => e.textContent)`)
	shoot(t, ctx, shots, "step")
	var want []string
	for _, qs := range stats {
		for _, r := range qs.MainRewards {
			want = append(want, f3(r))
		}
	}
	if strings.Join(stepRewards, " ") != strings.Join(want, " ") {
		t.Errorf("step 1 rewards in the DOM %v, stats.jsonl %v", stepRewards, want)
	}

	// A rollout tree: one with executors.
	recs := readInspections(t, filepath.Join(rollout.StepDir(dir, 1), rollout.RolloutsFile))
	rec := recs[0]
	for _, r := range recs {
		if len(r.Tree.Executors) > len(rec.Tree.Executors) {
			rec = r
		}
	}
	open(t, ctx, fmt.Sprintf("%s/step/1/query/%s/rollout/%d", srv.URL, rec.Task.QueryID, rec.Task.K), "#planner")
	eval[bool](t, ctx, `document.querySelectorAll('details').forEach(d => d.open = true), true`)
	main, answer := text(t, ctx, "#main"), text(t, ctx, "#answer")
	executors := eval[int](t, ctx, `document.querySelectorAll('section.traj[id^=executor-]').length`)
	delegations := eval[int](t, ctx, `document.querySelectorAll('#planner a.delegation').length`)
	firstObs := eval[string](t, ctx, `(document.querySelector('#planner pre.obs') || {}).textContent || ''`)
	shoot(t, ctx, shots, "rollout")
	if main != f3(rec.Scores.Main) || answer != rec.Tree.Answer {
		t.Errorf("tree shows R_M %s answer %q, want %s %q", main, answer, f3(rec.Scores.Main), rec.Tree.Answer)
	}
	if executors != len(rec.Tree.Executors) || delegations != len(rec.Tree.Executors) {
		t.Errorf("tree shows %d executors and %d delegation links, want %d", executors, delegations, len(rec.Tree.Executors))
	}
	if steps := rec.Tree.Planner.Steps; len(steps) > 0 && len(steps[0].Calls) > 0 && firstObs != steps[0].Calls[0].Observation {
		t.Errorf("first planner observation %q, want %q", firstObs, steps[0].Calls[0].Observation)
	}

	// A token view, of a run whose trajectories are split by drift.
	drift := driftRun(t)
	dsrv := serveRun(t, drift)
	first, second := driftPair(t, drift)
	planner, err := rollout.ReadSamplesJSONL(filepath.Join(rollout.StepDir(drift, 1), rollout.PlannerFile))
	if err != nil {
		t.Fatal(err)
	}
	smp := planner[second]
	open(t, ctx, dsrv.URL+"/step/1/sample/planner/"+strconv.Itoa(second), "#tokens")
	masks := eval[[]string](t, ctx, `[...document.querySelectorAll('#tokens span.t')].map(e => e.dataset.mask)`)
	boundary, advantage := text(t, ctx, "#drift-start"), text(t, ctx, "#advantage")
	shoot(t, ctx, shots, "tokens")
	n := min(len(smp.LossMask), 2048)
	if len(masks) != n {
		t.Fatalf("token view shows %d tokens, want %d", len(masks), n)
	}
	for i := range n {
		if masks[i] != strconv.Itoa(int(smp.LossMask[i])) {
			t.Fatalf("token %d: mask %s in the DOM, %d in the file", i, masks[i], smp.LossMask[i])
		}
	}
	if !strings.Contains(boundary, "sample #"+strconv.Itoa(first)) || advantage != f3(smp.Advantage) {
		t.Errorf("drift boundary %q, advantage %s; want a link to sample #%d and advantage %s", boundary, advantage, first, f3(smp.Advantage))
	}
}
