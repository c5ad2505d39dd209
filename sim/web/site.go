package web

import (
	"math/rand/v2"
	"slices"
	"strings"
)

// theme is what a site is about: the kinds of entities it profiles.
type theme struct {
	domain  string
	words   []string // second words of site names
	kinds   []kind
	tagline string
}

var themes = []theme{
	{"business", []string{"Ledger", "Market Wire", "Trade Journal", "Business Review"},
		[]kind{kindOrg, kindPerson}, "Company profiles and the people behind them"},
	{"culture", []string{"Review", "Bookshelf", "Gazette", "Literary Digest"},
		[]kind{kindWork, kindPerson}, "Books, writers and the arts"},
	{"geography", []string{"Atlas", "Travel Guide", "Gazetteer", "Almanac"},
		[]kind{kindCity, kindCountry}, "Places, statistics and travel notes"},
}

// site is one themed web site: a home page, an about page, one section per
// kind of entity it hosts, letter-group index pages for large sections, and
// one page per entity.
type site struct {
	name     string
	slug     string
	root     string // "/site/<slug>/"
	theme    *theme
	sections []*section
	featured []*entity
}

// section lists the site's entities of one kind. Sections of more than
// maxDirect entities are split into letter groups, which puts their
// entities one click deeper.
type section struct {
	kind     kind
	slug     string
	title    string
	path     string
	entities []*entity // sorted by name
	groups   []*group
}

type group struct {
	label    string
	slug     string
	path     string
	entities []*entity
}

const maxDirect = 6

var letterGroups = []struct{ label, slug, letters string }{
	{"A to F", "a-f", "ABCDEF"},
	{"G to M", "g-m", "GHIJKLM"},
	{"N to S", "n-s", "NOPQRS"},
	{"T to Z", "t-z", "TUVWXYZ"},
	{"Other", "other", ""},
}

func makeSites(names *namer, n int) []*site {
	sites := make([]*site, n)
	for i := range sites {
		th := &themes[i%len(themes)]
		name := names.unique(func() string { return names.root(2) + " " + names.pick(th.words) })
		slug := slugify(name)
		sites[i] = &site{name: name, slug: slug, root: "/site/" + slug + "/", theme: th}
	}
	return sites
}

// placeEntities puts every entity on one site whose theme covers its kind
// (any site when none does), half the distractors on their original's site,
// and lays out each site's sections, groups and page paths.
func (w *World) placeEntities(rng *rand.Rand) {
	var hosts [numKinds][]*site
	for _, s := range w.sites {
		for _, k := range s.theme.kinds {
			hosts[k] = append(hosts[k], s)
		}
	}
	for k := range hosts {
		if len(hosts[k]) == 0 {
			hosts[k] = w.sites
		}
	}
	for _, e := range w.entities {
		h := hosts[e.kind]
		e.site = h[rng.IntN(len(h))]
		if e.distractor && rng.IntN(2) == 0 {
			e.site = e.twins[0].site
		}
	}
	for _, s := range w.sites {
		var members []*entity
		for _, e := range w.entities {
			if e.site == s {
				members = append(members, e)
			}
		}
		for k := range numKinds {
			var list []*entity
			for _, e := range members {
				if e.kind == k {
					list = append(list, e)
				}
			}
			if len(list) == 0 {
				continue
			}
			s.sections = append(s.sections, newSection(s, k, list))
		}
		rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		s.featured = members[:min(4, len(members))]
		slices.SortFunc(s.featured, byName)
	}
}

func byName(a, b *entity) int { return strings.Compare(a.name, b.name) }

func newSection(s *site, k kind, list []*entity) *section {
	slug, title := k.section()
	sec := &section{kind: k, slug: slug, title: title, path: s.root + slug + "/", entities: list}
	slices.SortFunc(list, byName)
	for _, e := range list {
		e.path = sec.path + e.slug + ".html"
		e.golden = "root->" + slug + "->" + e.slug
	}
	if len(list) <= maxDirect {
		return sec
	}
	for _, lg := range letterGroups {
		g := &group{label: lg.label, slug: lg.slug, path: sec.path + lg.slug + "/"}
		for _, e := range list {
			in := strings.ContainsRune(lg.letters, rune(e.name[0]))
			if lg.letters == "" {
				in = !strings.ContainsRune("ABCDEFGHIJKLMNOPQRSTUVWXYZ", rune(e.name[0]))
			}
			if in {
				g.entities = append(g.entities, e)
				e.golden = "root->" + slug + "->" + g.slug + "->" + e.slug
			}
		}
		if len(g.entities) > 0 {
			sec.groups = append(sec.groups, g)
		}
	}
	return sec
}
