package view

import (
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"

	"github.com/mgrpo/mgrpo/rollout"
)

// stepData is what a step's pages know of the step.
type stepData struct {
	Step     int
	State    string
	Summary  *rollout.StepSummary
	Writing  bool
	Queries  []queryRow
	Pager    pager
	NoStats  bool
	Question string
	Gold     string
	QueryID  string

	// The step page's filter and search, the number of queries they
	// keep of Total, the histograms of the step's rewards and advantages,
	// its training records and whether all its rollouts failed.
	Filter    queryFilter
	Filters   []filterLink
	Total     int
	Kept      int
	Hists     []template.HTML
	Training  []trainingRow
	AllFailed bool
	// Failures are the step's non-zero failure counts from its summary.
	Failures []failureCount
	// PrevURL and NextURL link the neighbouring queries (query page) or
	// rollouts (rollout page) of the step, "" at either end.
	PrevURL, NextURL string
}

// filterLink is one filter of the step page with its link.
type filterLink struct {
	Name, Label, URL string
	Active           bool
}

// queryRow is one query of a step with its K rollouts.
type queryRow struct {
	QueryID  string
	Question string
	Stats    rollout.QueryStats
	Rollouts []rolloutRow
	// ZeroVariance says all K main rewards are equal.
	ZeroVariance bool
	// Excluded is set when the group was kept out of the step's batches
	// (an infra failure after its retries): its Stats are only its
	// rollouts' recorded rewards and executor counts.
	Excluded *excludedGroup
}

// rolloutRow is one rollout of a query: its reward (R_M), the advantage its
// planner samples carry, d_k and r_correct. Advantage and Correct are nil
// when no sample or inspection record holds them (a dropped zero-variance
// group, a missing rollouts.jsonl).
type rolloutRow struct {
	K         int
	Reward    float64
	Advantage *float64
	D         int
	Correct   *float64
	FormatOK  bool
	Error     string
	// FailureKind and FailureCause classify a failed rollout.
	FailureKind, FailureCause string
	// ID is the rollout's id in rollouts.jsonl; Answer, Turns (the
	// planner's) and Executors come from its tree; Drifted says a
	// trajectory of it was split by drift.
	ID        string
	Answer    string
	Turns     int
	Executors int
	Drifted   bool
	// Samples are the rollout's planner sample lines (several after drift
	// splits).
	Samples []int
}

// stepFiles are the indexes of a step's planner samples and rollouts.
type stepFiles struct {
	planner, executor, rollouts *fileIndex
	// excluded names the step's excluded groups (withExcluded).
	excluded map[string]*excludedGroup
}

func (h *Handler) stepIndexes(n int) (stepFiles, error) {
	var sf stepFiles
	var err error
	if sf.planner, err = h.index(h.stepFile(n, rollout.PlannerFile), "samples"); err != nil {
		return sf, err
	}
	if sf.executor, err = h.index(h.stepFile(n, rollout.ExecutorFile), "samples"); err != nil {
		return sf, err
	}
	sf.rollouts, err = h.index(h.stepFile(n, rollout.RolloutsFile), "rollouts")
	return sf, err
}

// queryRowOf builds the row of one query's statistics.
func queryRowOf(sf stepFiles, qs rollout.QueryStats) queryRow {
	row := queryRow{QueryID: qs.QueryID, Stats: qs, Excluded: sf.excluded[qs.QueryID]}
	for k, reward := range qs.MainRewards {
		rr := rolloutRow{K: k, Reward: reward}
		if k < len(qs.D) {
			rr.D = qs.D[k]
		}
		if lines := sf.planner.byRollout[rolloutKey(qs.QueryID, k)]; len(lines) > 0 {
			rr.Samples = lines
			a := sf.planner.samples[lines[0]].Advantage
			rr.Advantage = &a
		}
		if lines := sf.rollouts.byRollout[rolloutKey(qs.QueryID, k)]; len(lines) > 0 {
			m := sf.rollouts.rollouts[lines[0]]
			c := m.Scores.Correct
			rr.Correct, rr.FormatOK, rr.Error = &c, m.Scores.FormatOK, m.Error
			rr.FailureKind, rr.FailureCause = m.FailureKind, m.FailureCause
			rr.ID, rr.Answer, rr.Turns, rr.Executors, rr.Drifted = m.ID, m.answer(), m.turns(), m.executors(), m.drifted()
			if row.Question == "" {
				row.Question = m.Question
			}
		}
		row.Rollouts = append(row.Rollouts, rr)
	}
	row.ZeroVariance = row.Excluded == nil && row.zeroVariance()
	return row
}

// stepBase fills what every page of a step shows, and reads its stats; a
// step whose files are still being written has none.
func (h *Handler) stepBase(r *http.Request) (stepData, []rollout.QueryStats, stepFiles, error) {
	s, err := h.stepOf(r)
	if err != nil {
		return stepData{}, nil, stepFiles{}, err
	}
	d := stepData{Step: s.Step, State: s.State, Summary: s.Summary, Writing: s.State == StateWriting}
	if d.Writing {
		return d, nil, stepFiles{}, nil
	}
	stats, err := rollout.ReadStatsJSONL(h.stepFile(s.Step, rollout.StatsFile))
	if errors.Is(err, fs.ErrNotExist) {
		d.NoStats, err = true, nil
	}
	if err != nil {
		return d, nil, stepFiles{}, err
	}
	sf, err := h.stepIndexes(s.Step)
	if err == nil {
		stats, sf.excluded = withExcluded(stats, sf, d.Summary)
	}
	return d, stats, sf, err
}

func (h *Handler) serveStep(w http.ResponseWriter, r *http.Request) {
	d, stats, sf, err := h.stepBase(r)
	if err == nil {
		d.Filter, err = filterOf(r)
	}
	if err == nil && !d.Writing {
		base := "/step/" + strconv.Itoa(d.Step)
		for _, f := range filterNames {
			fl := queryFilter{Filter: f.Name, Q: d.Filter.Q}
			d.Filters = append(d.Filters, filterLink{Name: f.Name, Label: f.Label, URL: base + "?" + fl.query(), Active: f.Name == d.Filter.Filter})
		}
		var kept []queryRow
		var rewards, advantages []float64
		failed := 0
		for _, qs := range stats {
			row := queryRowOf(sf, qs)
			for _, rr := range row.Rollouts {
				rewards = append(rewards, rr.Reward)
				if rr.Advantage != nil {
					advantages = append(advantages, *rr.Advantage)
				}
				if rr.Error != "" {
					failed++
				}
			}
			if d.Filter.keeps(row) {
				kept = append(kept, row)
			}
		}
		d.Total, d.Kept = len(stats), len(kept)
		d.AllFailed = allFailed(d.Summary) || (d.Summary == nil && len(rewards) > 0 && failed == len(rewards))
		d.Training = trainingRows(d.Summary)
		d.Failures = failureCounts(d.Summary)
		if len(rewards) > 0 {
			d.Hists = append(d.Hists, histogram("hist-reward", "rewards R_M ("+strconv.Itoa(len(rewards))+" rollouts)", rewards))
		}
		if len(advantages) > 0 {
			d.Hists = append(d.Hists, histogram("hist-advantage", "planner advantages ("+strconv.Itoa(len(advantages))+" rollouts)", advantages))
		}
		if q := d.Filter.query(); q != "" {
			base += "?" + q
		}
		d.Pager = paginate(r, base, len(kept), queriesPerPage)
		d.Queries = kept[d.Pager.From:d.Pager.To]
	}
	h.render(w, r, "step", "step "+strconv.Itoa(d.Step), d, err)
}

func (h *Handler) serveQuery(w http.ResponseWriter, r *http.Request) {
	d, stats, sf, err := h.stepBase(r)
	q := r.PathValue("query")
	if err == nil {
		err = notFound("step %d has no query %q", d.Step, q)
		for i, qs := range stats {
			if qs.QueryID == q {
				if i > 0 {
					d.PrevURL = fmt.Sprintf("/step/%d/query/%s", d.Step, url.PathEscape(stats[i-1].QueryID))
				}
				if i+1 < len(stats) {
					d.NextURL = fmt.Sprintf("/step/%d/query/%s", d.Step, url.PathEscape(stats[i+1].QueryID))
				}
				row := queryRowOf(sf, qs)
				d.Queries, d.QueryID, d.Question, err = []queryRow{row}, q, row.Question, nil
				if lines := sf.rollouts.byRollout[rolloutKey(q, 0)]; len(lines) > 0 {
					if rec, rerr := readRecord(sf.rollouts, lines[0]); rerr == nil {
						d.Gold = rec.GoldAnswer
					}
				}
				break
			}
		}
	}
	h.render(w, r, "query", "step "+strconv.Itoa(d.Step)+" query "+q, d, err)
}
