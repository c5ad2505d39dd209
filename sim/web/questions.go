package web

import (
	"fmt"
	"math/rand/v2"
	"strconv"
)

// difficulties maps a chain's hop count to its difficulty label.
var difficulties = [...]string{1: "easy", 2: "medium", 3: "hard"}

// makeQuestions draws count distinct questions from the world's question
// stream. Question i depends only on the world and i, never on count, so a
// longer list extends a shorter one.
func (w *World) makeQuestions(count int) ([]Question, error) {
	rng := rand.New(rand.NewPCG(uint64(w.seed), streamQuestions))
	var reals []*entity
	for _, e := range w.entities {
		if !e.distractor {
			reals = append(reals, e)
		}
	}
	seen := make(map[string]bool)
	qs := make([]Question, 0, count)
	budget := 50*count + 1000
	for attempt := 0; len(qs) < count; attempt++ {
		if attempt >= budget {
			return qs, fmt.Errorf("only %d distinct questions found, %d asked: raise EntitiesPerKind", len(qs), count)
		}
		q, ok := w.drawQuestion(rng, reals)
		if !ok || seen[q.Question] {
			continue
		}
		seen[q.Question] = true
		q.ID = "sim-" + strconv.FormatInt(w.seed, 10) + "-" + strconv.Itoa(len(qs)+1)
		qs = append(qs, q)
	}
	return qs, nil
}

// drawQuestion walks a random chain of 1 to 3 hops from a random real
// entity. Every hop but the last must lead to an entity, and no entity is
// visited twice, so no question answers itself. ok is false when the walk
// got stuck.
func (w *World) drawQuestion(rng *rand.Rand, reals []*entity) (Question, bool) {
	hops := 1
	switch p := rng.Float64(); {
	case p >= 0.7:
		hops = 3
	case p >= 0.3:
		hops = 2
	}
	start := reals[rng.IntN(len(reals))]
	q := Question{
		Chain:      Chain{Entity: start.name},
		Hops:       hops,
		Type:       "single_source",
		Difficulty: difficulties[hops],
		Lang:       "en",
		Domain:     start.site.theme.domain,
		Site:       start.site.slug,
		RootPath:   start.site.root,
	}
	visited := map[*entity]bool{start: true}
	cur := start
	for h := range hops {
		last := h == hops-1
		var options []int
		for i, obj := range cur.objects {
			if (obj == nil && last) || (obj != nil && !visited[obj]) {
				options = append(options, i)
			}
		}
		if len(options) == 0 {
			return Question{}, false
		}
		i := options[rng.IntN(len(options))]
		f := cur.facts[i]
		q.Chain.Relations = append(q.Chain.Relations, f.Relation)
		q.EvidencePaths = append(q.EvidencePaths, cur.path)
		q.GoldenPaths = append(q.GoldenPaths, cur.golden)
		if cur.site != start.site {
			q.Type = "multi_source"
		}
		q.Answer = f.Object
		cur = cur.objects[i]
		visited[cur] = true
	}
	q.Question = QuestionText(q.Chain)
	return q, true
}
