package view

import (
	"net/http"
	"net/url"
	"strings"
)

// filterNames are the step page's filters, in the order its links show
// them, with what each keeps: the groups an RL engineer looks at first
// when a step's numbers look wrong.
var filterNames = []struct{ Name, Label string }{
	{"failed", "failed rollouts"},
	{"invalid", "invalid format"},
	{"zerovar", "zero-variance groups"},
	{"drift", "drift splits"},
	{"excluded", "excluded"},
}

// queryFilter is a step page's ?filter= and ?q= (a question's text, a
// query id or a rollout id, matched case-insensitively as a substring).
type queryFilter struct {
	Filter string
	Q      string
}

// filterOf reads the request's filter; an unknown ?filter= is an error
// naming the ones there are.
func filterOf(r *http.Request) (queryFilter, error) {
	f := queryFilter{Filter: r.URL.Query().Get("filter"), Q: strings.TrimSpace(r.URL.Query().Get("q"))}
	if f.Filter == "" {
		return f, nil
	}
	var names []string
	for _, n := range filterNames {
		if n.Name == f.Filter {
			return f, nil
		}
		names = append(names, n.Name)
	}
	return f, &httpError{http.StatusBadRequest, "filter " + f.Filter + ": want one of " + strings.Join(names, ", ")}
}

// active reports whether the filter keeps less than everything.
func (f queryFilter) active() bool { return f.Filter != "" || f.Q != "" }

// query is the filter as a URL query ("" when inactive), for links that
// keep it (the pager's).
func (f queryFilter) query() string {
	v := url.Values{}
	if f.Filter != "" {
		v.Set("filter", f.Filter)
	}
	if f.Q != "" {
		v.Set("q", f.Q)
	}
	return v.Encode()
}

// keeps reports whether the query row passes the filter and the search.
func (f queryFilter) keeps(row queryRow) bool {
	if f.Q != "" && !row.matches(f.Q) {
		return false
	}
	switch f.Filter {
	case "failed":
		return row.any(func(r rolloutRow) bool { return r.Error != "" })
	case "invalid":
		return row.any(func(r rolloutRow) bool { return r.Correct != nil && !r.FormatOK })
	case "zerovar":
		return row.zeroVariance()
	case "drift":
		return row.any(func(r rolloutRow) bool { return r.Drifted })
	case "excluded":
		return row.Excluded != nil
	}
	return true
}

// any reports whether one of the row's rollouts satisfies pred.
func (row queryRow) any(pred func(rolloutRow) bool) bool {
	for _, r := range row.Rollouts {
		if pred(r) {
			return true
		}
	}
	return false
}

// zeroVariance reports whether all K main rewards are equal: the group
// gives no learning signal.
func (row queryRow) zeroVariance() bool {
	rs := row.Stats.MainRewards
	for _, r := range rs {
		if r != rs[0] {
			return false
		}
	}
	return len(rs) > 0
}

// matches reports whether q is in the row's query id, question or one of
// its rollout ids, ignoring case.
func (row queryRow) matches(q string) bool {
	q = strings.ToLower(q)
	if strings.Contains(strings.ToLower(row.QueryID), q) || strings.Contains(strings.ToLower(row.Question), q) {
		return true
	}
	return row.any(func(r rolloutRow) bool { return r.ID != "" && strings.Contains(strings.ToLower(r.ID), q) })
}
