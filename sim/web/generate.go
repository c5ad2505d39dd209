package web

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
)

// Stream constants give each generation stage its own PCG stream, so that
// drawing more questions never changes the world they are drawn from.
const (
	streamWorld     = 0x5eb_0001
	streamQuestions = 0x5eb_0002
	// streamBackground draws Config.BackgroundSentences' fillers.
	streamBackground = 0x5eb_0003
)

// ErrConfig is wrapped by every error Generate returns for a bad Config.
var ErrConfig = errors.New("invalid sim web config")

// Generate builds the world cfg describes. It is deterministic: the same
// Config yields an identical World, page for page and question for question.
func Generate(cfg Config) (*World, error) {
	if cfg.Sites < 0 || cfg.Questions < 0 || cfg.EntitiesPerKind < 0 || cfg.BackgroundSentences < 0 {
		return nil, fmt.Errorf("generate: negative count in %+v: %w", cfg, ErrConfig)
	}
	if cfg.Sites == 0 {
		cfg.Sites = DefaultSites
	}
	if cfg.Questions == 0 {
		cfg.Questions = DefaultQuestions
	}
	if cfg.EntitiesPerKind == 0 {
		cfg.EntitiesPerKind = max(40, 6*cfg.Sites)
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), streamWorld))
	names := newNamer(rng)
	w := &World{seed: cfg.Seed, byName: make(map[string]*entity), background: cfg.BackgroundSentences}
	w.sites = makeSites(names, cfg.Sites)
	real := w.makeEntities(names, cfg.EntitiesPerKind)
	w.makeDistractors(names, real)
	w.placeEntities(rng)
	w.renderPages(rng)
	w.index = buildIndex(w)
	qs, err := w.makeQuestions(cfg.Questions)
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	w.Questions = qs
	return w, nil
}

func (w *World) add(e *entity) {
	e.slug = slugify(e.name)
	w.entities = append(w.entities, e)
	w.byName[e.name] = e
}

// makeEntities creates n real entities of each kind (fewer countries) and
// gives each its facts. It returns the real entities grouped by kind.
func (w *World) makeEntities(names *namer, n int) [numKinds][]*entity {
	var byKind [numKinds][]*entity
	counts := [numKinds]int{n, n, n, n, max(4, n/6)}
	gens := [numKinds]func() string{names.orgName, names.personName, names.workName, names.cityName, names.countryName}
	for k := range numKinds {
		for range counts[k] {
			e := &entity{name: gens[k](), kind: k}
			byKind[k] = append(byKind[k], e)
			w.add(e)
		}
	}
	rng := names.rng
	// Cities get their countries first so that a country's capital is one
	// of its own cities.
	citiesOf := make(map[*entity][]*entity)
	countryOf := make(map[*entity]*entity)
	for _, e := range byKind[kindCity] {
		c := byKind[kindCountry][rng.IntN(len(byKind[kindCountry]))]
		citiesOf[c] = append(citiesOf[c], e)
		countryOf[e] = c
	}
	for k := range numKinds {
		for _, e := range byKind[k] {
			for _, r := range relationsOf[k] {
				var obj *entity
				switch {
				case r.name == "country":
					obj = countryOf[e]
				case r.name == "capital":
					if len(citiesOf[e]) == 0 {
						continue // a country without cities states no capital
					}
					obj = citiesOf[e][rng.IntN(len(citiesOf[e]))]
				case r.target != literal:
					obj = byKind[r.target][rng.IntN(len(byKind[r.target]))]
				}
				e.addFact(r.name, obj, literalValue(names, r.name))
			}
		}
	}
	return byKind
}

// addFact appends a fact whose object is obj's name, or value when obj is
// nil.
func (e *entity) addFact(rel string, obj *entity, value string) {
	if obj != nil {
		value = obj.name
	}
	e.facts = append(e.facts, Fact{Subject: e.name, Relation: rel, Object: value})
	e.objects = append(e.objects, obj)
}

// literalValue draws a value for a literal relation. It always draws, even
// for entity relations, so the random stream does not depend on which
// branch a relation takes.
func literalValue(names *namer, rel string) string {
	rng := names.rng
	year := func(lo, hi int) string { return strconv.Itoa(lo + rng.IntN(hi-lo+1)) }
	switch rel {
	case "founding year":
		return year(1850, 2015)
	case "birth year":
		return year(1930, 1998)
	case "release year":
		return year(1950, 2024)
	case "industry":
		return names.pick(industries)
	case "occupation":
		return names.pick(occupations)
	case "genre":
		return names.pick(genres)
	case "population":
		return names.population()
	case "currency":
		return names.currency()
	}
	rng.Uint64()
	return ""
}

// makeDistractors adds near-duplicates of about a third of the real
// organizations, people, works and cities. A distractor states the same
// relations as its original with different objects; it is never the object
// of a fact, so it cannot sit inside a question chain.
func (w *World) makeDistractors(names *namer, byKind [numKinds][]*entity) {
	rng := names.rng
	for _, k := range []kind{kindOrg, kindPerson, kindWork, kindCity} {
		for _, orig := range byKind[k] {
			want := 0
			switch p := rng.Float64(); {
			case p < 0.1:
				want = 2
			case p < 0.35:
				want = 1
			}
			for _, v := range variants(k, orig.name) {
				if want == 0 {
					break
				}
				if !names.claim(v) {
					continue
				}
				want--
				d := &entity{name: v, kind: k, distractor: true, twins: []*entity{orig}}
				orig.twins = append(orig.twins, d)
				for i, f := range orig.facts {
					var obj *entity
					if o := orig.objects[i]; o != nil {
						pool := byKind[o.kind]
						obj = pool[rng.IntN(len(pool))]
						if obj == o {
							obj = pool[(slices.Index(pool, o)+1)%len(pool)]
						}
					}
					value := literalValue(names, f.Relation)
					for obj == nil && value == f.Object {
						value = literalValue(names, f.Relation)
					}
					d.addFact(f.Relation, obj, value)
				}
				w.add(d)
			}
		}
	}
}
