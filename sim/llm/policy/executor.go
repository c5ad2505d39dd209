package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/mgrpo/mgrpo/sim/web"
)

// execute is the executor's turn: read the subtask, rebuild the facts read
// so far, then report when the chain resolves, or work on the next hop by
// visiting a promising search result or searching for one.
func (t turn) execute() Output {
	chain, ok := taskChain(t.conv.task, false)
	if !ok {
		return Output{
			Reasoning: "I cannot find a task I know how to research.",
			Content:   "I do not know what to look for.",
		}
	}
	s := t.skills()
	facts := t.conv.toolFacts(t.p.facts)
	// Trusting snippets and reading cut sentences are decided lazily, at
	// the first hop whose facts they change (see resolver.hop), and only
	// when a snippet read this turn offers such a fact.
	r := &resolver{ch: t.ch, conv: t.conv, snippet: ruledOut, cut: ruledOut}
	if freshSnippetFor(chain, facts, false) {
		r.snippet = undecided
		if freshSnippetFor(chain, facts, true) {
			r.cut = undecided
		}
	}
	res := r.resolve(chain, facts)
	if res.done {
		return Output{
			Reasoning: fmt.Sprintf("I need %s. %sMy report is complete.", phrase(chain), knownText(res)),
			Content:   t.report(res, chain, true),
		}
	}
	rel, cur := res.next(chain), res.current
	if t.conv.turns+1 >= s.ExecutorTurns {
		return Output{
			Reasoning: fmt.Sprintf("I need the %s of %s but I am out of turns. I report what I have.", rel, cur),
			Content:   t.report(res, chain, false),
		}
	}
	goal := web.SubtaskText(web.Chain{Entity: cur, Relations: []string{rel}})
	// The notes come first, once per entity: a deterministic habit, not a
	// decision, so a run without the notes tool makes the same decisions.
	if t.notes != "" && !t.conv.lookedUp(t.notes, cur) {
		args, _ := json.Marshal(map[string]string{"entity": cur})
		return Output{
			Reasoning: fmt.Sprintf("I need the %s of %s. %sI will check the notes about %s first.", rel, cur, knownText(res), cur),
			ToolCalls: []ToolCall{{Name: t.notes, Arguments: string(args)}},
		}
	}
	if t.canVisit {
		if cands := t.candidates(rel, cur); len(cands) > 0 {
			urls := t.pickURLs(cands)
			return Output{
				Reasoning: fmt.Sprintf("I need the %s of %s. %sThe search results point to %s; I will read it.",
					rel, cur, knownText(res), strings.Join(urls, " and ")),
				ToolCalls: []ToolCall{t.toolCall(ToolVisit, map[string]any{"url": urls, "goal": goal})},
			}
		}
	}
	if t.canSearch {
		if qs := t.queries(rel, cur); len(qs) > 0 {
			return Output{
				Reasoning: fmt.Sprintf("I need the %s of %s. %sI will search for it.", rel, cur, knownText(res)),
				ToolCalls: []ToolCall{t.toolCall(ToolSearch, map[string]any{"query": qs})},
			}
		}
	}
	return Output{
		Reasoning: fmt.Sprintf("I need the %s of %s but I have nothing left to try. I report what I have.", rel, cur),
		Content:   t.report(res, chain, false),
	}
}

// report renders the executor's final message: the facts of the resolved
// hops (the final one last) and, when the chain did not resolve, the miss
// of the hop it stopped at. The single-agent baseline adds an answer tag.
func (t turn) report(res resolution, chain web.Chain, done bool) string {
	lines := make([]string, 0, len(res.steps)+1)
	for _, f := range res.steps {
		lines = append(lines, web.FactSentence(f))
	}
	if !done {
		lines = append(lines, web.MissSentence(res.next(chain), res.current))
	}
	text := strings.Join(lines, "\n")
	if !t.conv.answerTag {
		return text
	}
	return t.answer(text, res.current, true)
}

// freshSnippetFor reports whether a search result read this turn shows a
// fact sentence (cut short, when cut) about one of the chain's relations,
// the only case where trusting snippets is a decision at all.
func freshSnippetFor(chain web.Chain, facts []evidence, cut bool) bool {
	for _, e := range facts {
		if !e.snippet || !e.fresh || (cut && !e.cut) {
			continue
		}
		for _, rel := range chain.Relations {
			if strings.EqualFold(e.fact.Relation, rel) {
				return true
			}
		}
	}
	return false
}

// candidate is an unvisited search result with its relevance to a hop.
type candidate struct {
	url   string
	score int
}

// candidates returns the unvisited search results that mention the hop's
// entity (or a name close to it), most relevant first.
func (t turn) candidates(rel, cur string) []candidate {
	visited := t.conv.visited()
	seen := map[string]bool{}
	var out []candidate
	for _, r := range t.conv.results {
		if r.name != ToolSearch && r.name != "" {
			continue
		}
		for _, l := range links(t.p.links, r.text) {
			key := normalizeURL(l.url)
			if visited[key] || seen[key] {
				continue
			}
			seen[key] = true
			if sc := relevance(l, rel, cur); sc > 0 {
				out = append(out, candidate{url: l.url, score: sc})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].score > out[j].score })
	return out
}

// relevance scores a search result for the hop "rel of cur"; 0 means the
// result does not look related to the entity at all.
func relevance(l foundLink, rel, cur string) int {
	score := 0
	switch {
	case containsLowered(l.lowTitle, cur):
		score += 4
		if strings.EqualFold(strings.TrimSpace(l.title), cur) || titleLeads(l.title, cur) {
			score += 2
		}
	case containsLowered(l.lowText, cur):
		score += 3
	case len(firstWord(cur)) >= 4 && containsLowered(l.lowText, firstWord(cur)):
		score++
	default:
		return 0
	}
	if containsLowered(l.lowText, rel) {
		score++
	}
	return score
}

// titleLeads reports whether title starts with name followed by a separator
// rather than by more words of a longer name.
func titleLeads(title, name string) bool {
	if len(title) <= len(name) || !strings.EqualFold(title[:len(name)], name) {
		return false
	}
	rest := strings.TrimSpace(title[len(name):])
	return rest == "" || strings.IndexAny(rest[:1], "-–—|:(,") == 0
}

// pickURLs chooses one or two candidates to visit: the most relevant with
// probability PickBest, another one otherwise (weighted by relevance), and
// a second one with probability VisitTwo.
func (t turn) pickURLs(cands []candidate) []string {
	first := 0
	if len(cands) > 1 {
		// The other candidates share the rest by relevance (at the default
		// relevance weight 1), so a near-namesake's page is the likeliest
		// wrong pick, as it is for a hurried reader.
		rest := 0
		for _, c := range cands[1:] {
			rest += c.score
		}
		feats := make([][]float64, len(cands))
		feats[0] = []float64{1, t.ch.ctx[1], 0}
		for i := 1; i < len(feats); i++ {
			feats[i] = []float64{0, 0, math.Log(float64(cands[i].score) / float64(rest))}
		}
		first = t.ch.decide(KindPick, feats, nil)
	}
	urls := []string{cands[first].url}
	if len(cands) > 1 && t.ch.flip(KindVisitTwo) {
		second := 0
		if first == 0 {
			second = 1
		}
		urls = append(urls, cands[second].url)
	}
	return urls
}

// queries returns 1 to MaxQueries query strings for the hop that were not
// searched before; none when every variant has been tried.
func (t turn) queries(rel, cur string) []string {
	done := t.conv.searched()
	var fresh []string
	for _, q := range []string{cur + " " + rel, "the " + rel + " of " + cur, `"` + cur + `"`} {
		if !done[strings.ToLower(q)] {
			fresh = append(fresh, q)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	n := 1
	if m := min(t.skills().MaxQueries, len(fresh)); m > 1 {
		feats := make([][]float64, m)
		for k := range feats {
			feats[k] = []float64{float64(k), float64(k) * t.ch.ctx[1]}
		}
		n += t.ch.decide(KindQueries, feats, nil)
	}
	return fresh[:n]
}
