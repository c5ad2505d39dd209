package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mgrpo/mgrpo/bench/view"
	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// serveRunWith serves dir's pages with the given options.
func serveRunWith(t *testing.T, dir string, o view.Options) *httptest.Server {
	t.Helper()
	h, err := view.NewWithOptions(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// allFailedRun writes a one-step run whose two rollouts both failed, as a
// dead endpoint leaves it.
func allFailedRun(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "failed")
	sink := rollout.DirSink{Dir: dir}
	var files rollout.StepFiles
	files.Stats = []rollout.QueryStats{{QueryID: "q0", MainRewards: []float64{0, 0}, D: []int{0, 0}}}
	for k := range 2 {
		raw, err := json.Marshal(rollout.RolloutRecord{ID: fmt.Sprintf("failed/1/q0/%d", k), Task: rollout.RolloutTask{Step: 1, QueryID: "q0", K: k},
			Question: "a question", Error: "planner: dial tcp 127.0.0.1:1: connection refused"})
		if err != nil {
			t.Fatal(err)
		}
		files.Rollouts = append(files.Rollouts, raw)
	}
	ctx := context.Background()
	if err := sink.WriteStep(ctx, 1, files); err != nil {
		t.Fatal(err)
	}
	if err := sink.WriteSummary(ctx, rollout.StepSummary{Step: 1, Queries: 1, Rollouts: 2, FailedRollouts: 2}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestViewForRLEngineersInBrowser renders, in headless Chromium, what an RL
// engineer looks at: the token view's text from the sim's tokenizer, the
// step page's histograms, filters and search, a query's K rollouts side by
// side, previous/next, a training run's loss, versions, staleness and
// trainer checks, plots fitted to a one-step run, and the banner of a step
// whose rollouts all failed; each checked from the DOM, with screenshots.
func TestViewForRLEngineersInBrowser(t *testing.T) {
	chromiumPath(t) // skip before the training run when there is no browser
	tok := simllm.NewTokenizer()
	simOpts := view.Options{Detokenizer: simDetokenizer{tok}, PerToken: true}

	// A training run on the sim trainer: two steps, written before the
	// browser starts so that its budget is spent on pages alone.
	train := filepath.Join(t.TempDir(), "train")
	if code, stdout, stderr := runCLI(t, simTrainArgs(train, 2)...); code != 0 {
		t.Fatalf("train exit %d\n%s\n%s", code, stdout, stderr)
	}
	ctx := browser(t)
	shots := screenshotDir(t)
	sums, err := rollout.ReadSummaries(filepath.Join(train, rollout.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	srv := serveRunWith(t, train, simOpts)

	// The run page: plots above the step table, the training columns.
	open(t, ctx, srv.URL+"/", "#steps")
	plots := eval[[]string](t, ctx, `[...document.querySelectorAll('#plots svg.plot')].map(e => e.id)`)
	versions := eval[[]string](t, ctx, `[...document.querySelectorAll('#steps td.versions')].map(e => e.textContent.trim())`)
	stale := eval[[]string](t, ctx, `[...document.querySelectorAll('#steps td.staleness')].map(e => e.textContent.trim())`)
	checks := eval[[]string](t, ctx, `[...document.querySelectorAll('#steps td.checks')].map(e => e.textContent.trim())`)
	tableTop := eval[float64](t, ctx, `document.querySelector('#steps tbody tr').getBoundingClientRect().top`)
	shoot(t, ctx, shots, "rl-run-training")
	if strings.Join(plots, " ") != "plot-reward plot-accuracy plot-subreward plot-length plot-loss" {
		t.Errorf("plots %v; want the four curves and the planner's loss per token", plots)
	}
	if tableTop > 1000 {
		t.Errorf("the step table's first row starts at %.0f px, below the first screen (1000 px)", tableTop)
	}
	if len(versions) != len(sums) {
		t.Fatalf("%d training rows, %d steps", len(versions), len(sums))
	}
	for i, s := range sums {
		p := s.Training["planner"]
		if !strings.Contains(versions[i], fmt.Sprintf("planner v%d→v%d", p.PreviousVersion, p.Version)) || !strings.HasPrefix(stale[i], strconv.FormatInt(p.Staleness, 10)) {
			t.Errorf("step %d: versions %q staleness %q; summary planner v%d→v%d staleness %d", s.Step, versions[i], stale[i], p.PreviousVersion, p.Version, p.Staleness)
		}
		if checks[i] != "ok" {
			t.Errorf("step %d: trainer checks %q, want ok (the sim trainer agrees with the sampler)", s.Step, checks[i])
		}
	}

	// The step page: histograms, training with the trainer's checks,
	// filters and search.
	stats, err := rollout.ReadStatsJSONL(filepath.Join(rollout.StepDir(train, 1), rollout.StatsFile))
	if err != nil {
		t.Fatal(err)
	}
	open(t, ctx, srv.URL+"/step/1", "#hists")
	histN := eval[string](t, ctx, `document.querySelector('#hist-reward').dataset.n`)
	histCounts := eval[string](t, ctx, `document.querySelector('#hist-reward').dataset.counts`)
	loss := eval[string](t, ctx, `document.querySelector('#training tr[data-role=planner] td.loss').textContent`)
	checkCells := eval[[]string](t, ctx, `[...document.querySelectorAll('#training table.metrics td.check')].map(e => e.textContent).filter(s => s)`)
	filters := eval[[]string](t, ctx, `[...document.querySelectorAll('a.filter[data-filter]')].map(e => e.dataset.filter)`)
	shoot(t, ctx, shots, "rl-step-histograms-training")
	var rollouts, zeroVar int
	for _, qs := range stats {
		rollouts += len(qs.MainRewards)
		if qs.MainStd == 0 {
			zeroVar++
		}
	}
	total := 0
	for _, c := range strings.Split(histCounts, ",") {
		n, _ := strconv.Atoi(c)
		total += n
	}
	if histN != strconv.Itoa(rollouts) || total != rollouts {
		t.Errorf("reward histogram of %s values (bars sum to %d), step 1 has %d rollouts", histN, total, rollouts)
	}
	p := sums[0].Training["planner"]
	if want := p.Metrics["loss:sum"] / float64(p.LossTokens); loss != strconv.FormatFloat(want, 'g', 3, 64) {
		t.Errorf("loss per token %q in the DOM, summary %v", loss, want)
	}
	if len(checkCells) < 2 {
		t.Errorf("trainer checks shown: %v, want unmatched tokens and advantage order among them", checkCells)
	}
	for _, c := range checkCells {
		if c != "ok" {
			t.Errorf("a trainer check says %q", c)
		}
	}
	if strings.Join(filters, " ") != "failed invalid zerovar drift excluded" {
		t.Errorf("filters %v", filters)
	}
	open(t, ctx, srv.URL+"/step/1?filter=zerovar", "#kept")
	kept := eval[string](t, ctx, `document.querySelector('#kept').textContent`)
	shown := eval[int](t, ctx, `document.querySelectorAll('section.query').length`)
	shoot(t, ctx, shots, "rl-step-filter-zerovar")
	if kept != strconv.Itoa(zeroVar) || shown != min(zeroVar, 20) {
		t.Errorf("zero-variance filter keeps %s (%d shown), stats.jsonl has %d such groups", kept, shown, zeroVar)
	}
	recs := readInspections(t, filepath.Join(rollout.StepDir(train, 1), rollout.RolloutsFile))
	var question string
	for _, line := range readLines(t, filepath.Join(rollout.StepDir(train, 1), rollout.RolloutsFile)) {
		var r struct {
			Question string `json:"question"`
		}
		json.Unmarshal([]byte(line), &r)
		question = r.Question
		break
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/step/1"), chromedp.WaitVisible(chromedp.CSS("#search")),
		chromedp.SendKeys("#search", question), chromedp.Submit("#search"), chromedp.WaitVisible(chromedp.CSS("#kept"))); err != nil {
		t.Fatal(err)
	}
	found := eval[[]string](t, ctx, `[...document.querySelectorAll('section.query p.question')].map(e => e.textContent)`)
	shoot(t, ctx, shots, "rl-step-search")
	if len(found) == 0 {
		t.Errorf("searching %q finds nothing", question)
	}
	for _, q := range found {
		if !strings.Contains(strings.ToLower(q), strings.ToLower(question)) {
			t.Errorf("search %q shows question %q", question, q)
		}
	}

	// A query's K rollouts side by side.
	qs := stats[0]
	open(t, ctx, srv.URL+"/step/1/query/"+qs.QueryID, "#side")
	side := eval[[]string](t, ctx, `[...document.querySelectorAll('#side td.reward')].map(e => e.textContent)`)
	answers := eval[[]string](t, ctx, `[...document.querySelectorAll('#side td.answer')].map(e => e.textContent)`)
	ds := eval[[]string](t, ctx, `[...document.querySelectorAll('#side td.d')].map(e => e.textContent)`)
	shoot(t, ctx, shots, "rl-query-side-by-side")
	if len(side) != len(qs.MainRewards) {
		t.Fatalf("%d columns, K = %d", len(side), len(qs.MainRewards))
	}
	for k := range qs.MainRewards {
		if side[k] != f3(qs.MainRewards[k]) || ds[k] != strconv.Itoa(qs.D[k]) {
			t.Errorf("rollout %d: reward %s d %s, stats %s %d", k, side[k], ds[k], f3(qs.MainRewards[k]), qs.D[k])
		}
		for _, r := range recs {
			if r.Task.QueryID == qs.QueryID && r.Task.K == k && answers[k] != r.Tree.Answer {
				t.Errorf("rollout %d: answer %q, tree %q", k, answers[k], r.Tree.Answer)
			}
		}
	}

	// Previous and next: rollout 0 of the first query has no previous
	// one; its next is rollout 1.
	open(t, ctx, fmt.Sprintf("%s/step/1/query/%s/rollout/0", srv.URL, qs.QueryID), "#planner")
	if eval[bool](t, ctx, `document.querySelector('#prev') !== null`) {
		t.Error("the first rollout has a previous link")
	}
	if err := chromedp.Do(ctx, chromedp.Click("#next"), chromedp.WaitVisible(chromedp.CSS("#prev"))); err != nil {
		t.Fatal(err)
	}
	shoot(t, ctx, shots, "rl-rollout-next")
	if u := eval[string](t, ctx, `location.pathname`); u != fmt.Sprintf("/step/1/query/%s/rollout/1", qs.QueryID) {
		t.Errorf("next goes to %s", u)
	}

	// The token view with the sim's tokenizer: every token's text is the
	// tokenizer's piece, and the completions are the turns' text.
	planner, err := rollout.ReadSamplesJSONL(filepath.Join(rollout.StepDir(train, 1), rollout.PlannerFile))
	if err != nil {
		t.Fatal(err)
	}
	smp := planner[0]
	open(t, ctx, srv.URL+"/step/1/sample/planner/0", "#tokens")
	texts := eval[[]string](t, ctx, `[...document.querySelectorAll('#tokens span.t')].map(e => e.querySelector('.tt') ? e.querySelector('.tt').textContent : null)`)
	sources := eval[[]string](t, ctx, `[...document.querySelectorAll('#tokens div.span')].map(e => e.dataset.source)`)
	masks := eval[[]string](t, ctx, `[...document.querySelectorAll('#tokens span.t')].map(e => e.dataset.mask)`)
	classes := eval[[]string](t, ctx, `[...document.querySelectorAll('#tokens span.t')].map(e => e.className)`)
	shoot(t, ctx, shots, "rl-tokens-text")
	n := min(len(smp.InputIDs), 2048)
	if len(texts) != n {
		t.Fatalf("%d tokens shown, want %d", len(texts), n)
	}
	for i := range n {
		piece, err := tok.Decode([]int{smp.InputIDs[i]})
		if err != nil {
			t.Fatal(err)
		}
		want := strings.NewReplacer("\n", "↵", "\t", "→").Replace(piece)
		if texts[i] != want || masks[i] != strconv.Itoa(int(smp.LossMask[i])) {
			t.Fatalf("token %d: text %q mask %s in the DOM; id %d is %q, mask %d", i, texts[i], masks[i], smp.InputIDs[i], want, smp.LossMask[i])
		}
		if (smp.LossMask[i] == 0) != (classes[i] == "t p") {
			t.Fatalf("token %d: class %q with mask %d", i, classes[i], smp.LossMask[i])
		}
	}
	for _, s := range sources {
		if s != view.SourceTokenizer {
			t.Errorf("span source %q, want the tokenizer's on a sim run", s)
		}
	}

	// The same sample without a tokenizer: the text the farm kept.
	ksrv := serveRunWith(t, train, view.Options{})
	open(t, ctx, ksrv.URL+"/step/1/sample/planner/0", "#tokens")
	labels := eval[[]string](t, ctx, `[...document.querySelectorAll('#tokens p.spanlabel')].map(e => e.textContent)`)
	firstText := eval[string](t, ctx, `document.querySelector('#tokens pre.spantext').textContent`)
	shoot(t, ctx, shots, "rl-tokens-kept-text")
	if len(labels) == 0 || !strings.Contains(labels[0], "prompt") || firstText != question {
		t.Errorf("kept-text token view: labels %v, first text %q; want the prompt span holding the question %q", labels, firstText, question)
	}

	// A one-step run: the plot's axis is fitted to its one value.
	one := filepath.Join(t.TempDir(), "one")
	if code, stdout, stderr := runCLI(t, "rollout", "--sim", "--out", one, "--steps", "1", "--batch-size", "2", "--group-size", "2"); code != 0 {
		t.Fatalf("rollout exit %d\n%s\n%s", code, stdout, stderr)
	}
	oneSums, err := rollout.ReadSummaries(filepath.Join(one, rollout.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	osrv := serveRunWith(t, one, simOpts)
	open(t, ctx, osrv.URL+"/", "#plots")
	lo := eval[string](t, ctx, `document.querySelector('#plot-reward').dataset.lo`)
	hi := eval[string](t, ctx, `document.querySelector('#plot-reward').dataset.hi`)
	value := eval[string](t, ctx, `document.querySelector('#plot-reward text.value').textContent`)
	shoot(t, ctx, shots, "rl-run-one-step")
	l, _ := strconv.ParseFloat(lo, 64)
	h, _ := strconv.ParseFloat(hi, 64)
	r := oneSums[0].MeanMainReward
	if !(l < r && r < h) || h-l > 0.5 {
		t.Errorf("one-step reward axis [%s, %s] for the value %v; want a narrow range around it", lo, hi, r)
	}
	if value != strconv.FormatFloat(r, 'g', 3, 64) {
		t.Errorf("one-step plot labels its point %q, want %v", value, r)
	}

	// A step whose rollouts all failed has a banner.
	fsrv := serveRunWith(t, allFailedRun(t), simOpts)
	open(t, ctx, fsrv.URL+"/", "#failed-banner")
	banner := text(t, ctx, "#failed-banner")
	shoot(t, ctx, shots, "rl-run-all-failed")
	open(t, ctx, fsrv.URL+"/step/1", "#failed-banner")
	shoot(t, ctx, shots, "rl-step-all-failed")
	if !strings.Contains(banner, "every rollout failed") || !strings.Contains(banner, "1") {
		t.Errorf("banner %q", banner)
	}
}
