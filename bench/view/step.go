package view

import (
	"errors"
	"io/fs"
	"net/http"
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
}

// queryRow is one query of a step with its K rollouts.
type queryRow struct {
	QueryID  string
	Question string
	Stats    rollout.QueryStats
	Rollouts []rolloutRow
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
	// Samples are the rollout's planner sample lines (several after drift
	// splits).
	Samples []int
}

// stepFiles are the indexes of a step's planner samples and rollouts.
type stepFiles struct {
	planner, executor, rollouts *fileIndex
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
	row := queryRow{QueryID: qs.QueryID, Stats: qs}
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
			if row.Question == "" {
				row.Question = m.Question
			}
		}
		row.Rollouts = append(row.Rollouts, rr)
	}
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
	return d, stats, sf, err
}

func (h *Handler) serveStep(w http.ResponseWriter, r *http.Request) {
	d, stats, sf, err := h.stepBase(r)
	if err == nil && !d.Writing {
		d.Pager = paginate(r, "/step/"+strconv.Itoa(d.Step), len(stats), queriesPerPage)
		for _, qs := range stats[d.Pager.From:d.Pager.To] {
			d.Queries = append(d.Queries, queryRowOf(sf, qs))
		}
	}
	h.render(w, r, "step", "step "+strconv.Itoa(d.Step), d, err)
}

func (h *Handler) serveQuery(w http.ResponseWriter, r *http.Request) {
	d, stats, sf, err := h.stepBase(r)
	q := r.PathValue("query")
	if err == nil {
		err = notFound("step %d has no query %q", d.Step, q)
		for _, qs := range stats {
			if qs.QueryID == q {
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
