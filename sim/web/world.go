package web

// Config chooses a world. The world itself (sites, entities, pages, facts)
// depends only on Seed, Sites and EntitiesPerKind; Questions only says how
// many questions to draw from the world's endless, seeded question sequence.
// So a server started with one Config and a task file written with another
// Questions count (same Seed, Sites and EntitiesPerKind) describe the same
// web, and the first N questions are the same for any count of at least N.
type Config struct {
	// Seed drives every random choice (math/rand/v2 PCG).
	Seed int64
	// Sites is the number of sites; 0 means DefaultSites.
	Sites int
	// Questions is the number of questions to generate; 0 means
	// DefaultQuestions.
	Questions int
	// EntitiesPerKind is the number of real (non-distractor) entities of
	// each kind; 0 means 6 per site, at least 40. Raise it when asking for
	// thousands of questions.
	EntitiesPerKind int
	// BackgroundSentences adds a "Background" paragraph of that many filler
	// sentences to every entity page, for longer pages (and so longer
	// agent histories) in benchmarks. It draws from its own random stream,
	// so the rest of the world is the same as without it; 0 adds nothing.
	BackgroundSentences int
}

// Defaults applied to zero fields of Config.
const (
	DefaultSites     = 12
	DefaultQuestions = 200
)

// Question is one multi-hop question with its gold answer and the pages
// that hold the evidence of each hop.
type Question struct {
	// ID is stable for a given seed and index: "sim-<seed>-<n>".
	ID string `json:"id"`
	// Question is QuestionText(Chain).
	Question string `json:"question"`
	// Answer is the object of the chain's last hop.
	Answer string `json:"answer"`
	Chain  Chain  `json:"chain"`
	// Hops is len(Chain.Relations), from 1 to 3.
	Hops int `json:"hops"`
	// Type is "single_source" when every evidence page sits on one site,
	// else "multi_source".
	Type string `json:"type"`
	// Difficulty is "easy", "medium" or "hard" for 1, 2 or 3 hops.
	Difficulty string `json:"difficulty"`
	// Lang is the language of the question and pages ("en").
	Lang string `json:"lang"`
	// Domain is the theme of the site where the chain starts.
	Domain string `json:"domain"`
	// Site is the slug of the site where the chain starts.
	Site string `json:"site"`
	// RootPath is the home page path of that site, e.g. "/site/velmo-ledger/".
	RootPath string `json:"root_path"`
	// EvidencePaths holds, per hop, the path of the page stating that hop's
	// fact.
	EvidencePaths []string `json:"evidence_paths"`
	// GoldenPaths holds, per hop, the clicks from the evidence page's site
	// root to the evidence page, e.g. "root->companies->a-f->velmora-labs".
	GoldenPaths []string `json:"golden_paths"`
}

// World is a generated synthetic web: its sites and pages, the facts they
// state, the questions over those facts and a search index of the pages.
// A World is immutable once generated and safe for concurrent use.
type World struct {
	// Questions are the generated questions, in ID order.
	Questions []Question

	seed     int64
	sites    []*site
	entities []*entity
	byName   map[string]*entity
	pages    map[string]*page
	paths    []string // sorted page paths
	index    *bm25Index
	// background is Config.BackgroundSentences.
	background int
}

// kind is the type of an entity.
type kind int

const (
	kindOrg kind = iota
	kindPerson
	kindWork
	kindCity
	kindCountry
	numKinds
)

// literal marks a relation whose object is a value (a year, a number, a
// word) rather than another entity.
const literal kind = -1

func (k kind) String() string {
	return [...]string{"organization", "person", "creative work", "city", "country"}[k]
}

// section is the path segment and heading of the site section listing
// entities of the kind.
func (k kind) section() (slug, title string) {
	switch k {
	case kindOrg:
		return "companies", "Companies"
	case kindPerson:
		return "people", "People"
	case kindWork:
		return "works", "Books and works"
	case kindCity:
		return "cities", "Cities"
	default:
		return "countries", "Countries"
	}
}

// relation is one typed relation an entity of some kind carries.
type relation struct {
	name   string
	target kind // literal for values
}

// relationsOf lists, per kind, the relations every real entity of that kind
// states. The order is the order facts appear on the entity's page.
var relationsOf = [numKinds][]relation{
	kindOrg: {
		{"founder", kindPerson}, {"chief executive", kindPerson},
		{"headquarters city", kindCity}, {"founding year", literal}, {"industry", literal},
	},
	kindPerson: {
		{"employer", kindOrg}, {"birthplace", kindCity}, {"birth year", literal}, {"occupation", literal},
	},
	kindWork: {
		{"author", kindPerson}, {"publisher", kindOrg}, {"release year", literal}, {"genre", literal},
	},
	kindCity: {
		{"mayor", kindPerson}, {"country", kindCountry}, {"population", literal},
	},
	kindCountry: {
		{"capital", kindCity}, {"currency", literal},
	},
}

// entity is one thing the web talks about. Distractors are near-duplicates
// of real entities with their own, different facts; no real fact points at a
// distractor, so question chains never pass through one.
type entity struct {
	name       string
	slug       string
	kind       kind
	distractor bool
	facts      []Fact
	objects    []*entity // per fact: the object entity, nil for literals
	twins      []*entity // near-duplicates (for a real entity) or the original (for a distractor)
	site       *site
	path       string // the entity's page
	golden     string // clicks from the site root to the page
}

// fact returns the entity's fact for a relation.
func (e *entity) fact(rel string) (Fact, *entity, bool) {
	for i, f := range e.facts {
		if f.Relation == rel {
			return f, e.objects[i], true
		}
	}
	return Fact{}, nil, false
}

// PageText returns the visible text of the page at path, boilerplate
// included (cookie banner, navigation, advertisements, related links,
// footer), one block per line: what a crude HTML-to-text fetcher would
// see. ok is false when no page has that path.
func (w *World) PageText(path string) (text string, ok bool) {
	p, ok := w.pages[path]
	if !ok {
		return "", false
	}
	return p.text, true
}

// Paths returns the path of every page of the web, sorted. The caller may
// modify the returned slice.
func (w *World) Paths() []string {
	return append([]string(nil), w.paths...)
}

// Facts returns the facts of the entity named name (its exact name),
// distractors included, and whether there is one: what the sim's MCP notes
// store (sim/mcptools) serves.
func (w *World) Facts(name string) ([]Fact, bool) {
	e, ok := w.byName[name]
	if !ok {
		return nil, false
	}
	return append([]Fact(nil), e.facts...), true
}
