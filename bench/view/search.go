package view

import (
	"errors"
	"io/fs"
	"net/http"
	"strings"

	"github.com/mgrpo/mgrpo/rollout"
)

// maxSearchHits bounds the search page: a query that matches more is
// narrowed, not paged.
const maxSearchHits = 200

// searchHit is one query of one step that matches the run-wide search.
type searchHit struct {
	Step     int
	QueryID  string
	Question string
	Rewards  []float64
}

// searchPage is the search page's data.
type searchPage struct {
	Q         string
	Hits      []searchHit
	Truncated bool
}

// serveSearch finds ?q= (question text, query id or rollout id) in every
// written step of the run, reading only the steps' indexes.
func (h *Handler) serveSearch(w http.ResponseWriter, r *http.Request) {
	p := searchPage{Q: strings.TrimSpace(r.URL.Query().Get("q"))}
	steps, err := h.listSteps()
	if err == nil && p.Q != "" {
	steps:
		for _, s := range steps {
			if s.State == StateWriting {
				continue
			}
			stats, serr := rollout.ReadStatsJSONL(h.stepFile(s.Step, rollout.StatsFile))
			if errors.Is(serr, fs.ErrNotExist) {
				continue
			}
			if serr != nil {
				err = serr
				break
			}
			sf, ierr := h.stepIndexes(s.Step)
			if ierr != nil {
				err = ierr
				break
			}
			stats, sf.excluded = withExcluded(stats, sf, s.Summary)
			for _, qs := range stats {
				row := queryRowOf(sf, qs)
				if !row.matches(p.Q) {
					continue
				}
				if len(p.Hits) == maxSearchHits {
					p.Truncated = true
					break steps
				}
				p.Hits = append(p.Hits, searchHit{Step: s.Step, QueryID: row.QueryID, Question: row.Question, Rewards: qs.MainRewards})
			}
		}
	}
	h.render(w, r, "search", "search "+p.Q, p, err)
}
