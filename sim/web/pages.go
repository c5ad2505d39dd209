package web

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Prose around the facts. None of these sentences may take the grammar's
// fact shape ("The <relation> of <Subject> is …"); a test parses every page
// and checks that the only facts found are the world's own.
var (
	fillers = []string{
		"{N} is listed in several regional directories.",
		"Readers have written to us about {N} more than once.",
		"Archived newsletters mention {N} in passing.",
		"Details here come from public records and interviews.",
		"Some sources disagree on minor points, so we note only what is well documented.",
		"This profile is updated whenever new records surface.",
		"Local historians keep a close eye on {N}.",
		"Researchers often cite this page.",
		"Our correspondents filed a short note about {N} last year.",
		"Few entries in our archive draw as many visits.",
		"Press clippings on {N} fill a whole drawer in our office.",
		"We checked this entry against two independent sources.",
	}
	adCopy = []string{
		"Try {P} Cloud free for thirty days. Fast hosting for growing teams.",
		"{P} Insurance: cover that fits your life. Get a quote in minutes.",
		"Learn a language with {P}. Ten minutes a day is all it takes.",
		"Book flights with {P} Air and save on your next trip.",
		"{P} Bank: open an account today and earn a welcome bonus.",
		"Upgrade your kitchen with {P} appliances. Free delivery this week.",
	}
	ledes = [numKinds]string{
		kindOrg:     "{N} is a company active in {industry}.",
		kindPerson:  "{N} is a {occupation} whose career our editors follow.",
		kindWork:    "{N} is a {genre} title held in many libraries.",
		kindCity:    "{N} is a city covered by our travel desk.",
		kindCountry: "{N} is a country profiled in our atlas.",
	}
)

// renderPages renders every page of the web and stores them by path.
func (w *World) renderPages(rng *rand.Rand) {
	w.pages = make(map[string]*page)
	put := func(p *page) { w.pages[p.path] = p }
	put(indexPage(w.sites))
	for _, s := range w.sites {
		put(homePage(s, w.ads(rng, s)))
		put(aboutPage(s, w.ads(rng, s)))
		for _, sec := range s.sections {
			put(sectionPage(s, sec, w.ads(rng, s)))
			for _, g := range sec.groups {
				put(groupPage(s, sec, g, w.ads(rng, s)))
			}
		}
	}
	bg := rand.New(rand.NewPCG(uint64(w.seed), streamBackground))
	for _, e := range w.entities {
		put(w.entityPage(rng, bg, e))
	}
	w.paths = make([]string, 0, len(w.pages))
	for p := range w.pages {
		w.paths = append(w.paths, p)
	}
	slices.Sort(w.paths)
}

func (w *World) ads(rng *rand.Rand, s *site) [2]string {
	var ads [2]string
	for i := range ads {
		product := capitalize(syllables[rng.IntN(len(syllables))] + syllables[rng.IntN(len(syllables))])
		ads[i] = strings.ReplaceAll(adCopy[rng.IntN(len(adCopy))], "{P}", product)
	}
	return ads
}

func anchorsOf(list []*entity) []anchor {
	out := make([]anchor, len(list))
	for i, e := range list {
		out[i] = anchor{e.path, e.name}
	}
	return out
}

func homePage(s *site, ads [2]string) *page {
	c := chrome{site: s, title: "Home", ads: ads}
	return c.render(s.root, func(b *builder) {
		b.block("h1", "", func() { b.text(s.name) })
		b.para("intro", "Welcome to "+s.name+". "+s.theme.tagline+", updated by our editors every week.")
		b.block("h2", "", func() { b.text("Featured") })
		b.linkList("featured", anchorsOf(s.featured))
		b.block("h2", "", func() { b.text("Sections") })
		var links []anchor
		for _, sec := range s.sections {
			links = append(links, anchor{sec.path, sec.title + " (" + strconv.Itoa(len(sec.entities)) + " entries)"})
		}
		b.linkList("sections", links)
	})
}

func aboutPage(s *site, ads [2]string) *page {
	c := chrome{site: s, title: "About", crumbs: []anchor{{s.root + "about/", "About"}}, ads: ads}
	return c.render(s.root+"about/", func(b *builder) {
		b.block("h1", "", func() { b.text("About " + s.name) })
		b.para("", s.name+" is an independent publication. "+s.theme.tagline+" since the early days of the web.")
		b.para("", "Our small team of editors checks every entry before it is published. Write to us if you spot a mistake.")
	})
}

func sectionPage(s *site, sec *section, ads [2]string) *page {
	c := chrome{site: s, title: sec.title, crumbs: []anchor{{sec.path, sec.title}}, ads: ads}
	return c.render(sec.path, func(b *builder) {
		b.block("h1", "", func() { b.text(sec.title) })
		b.para("", "Browse "+strconv.Itoa(len(sec.entities))+" entries in this section.")
		if len(sec.groups) == 0 {
			b.linkList("entries", anchorsOf(sec.entities))
			return
		}
		var links []anchor
		for _, g := range sec.groups {
			links = append(links, anchor{g.path, g.label + " (" + strconv.Itoa(len(g.entities)) + ")"})
		}
		b.linkList("letter-groups", links)
	})
}

func groupPage(s *site, sec *section, g *group, ads [2]string) *page {
	title := sec.title + ", " + g.label
	c := chrome{site: s, title: title, crumbs: []anchor{{sec.path, sec.title}, {g.path, g.label}}, ads: ads}
	return c.render(g.path, func(b *builder) {
		b.block("h1", "", func() { b.text(title) })
		b.linkList("entries", anchorsOf(g.entities))
	})
}

// entityPage renders an entity's profile: a lede, a disambiguation note
// naming its near-duplicates, an infobox, and one prose paragraph per fact
// with the fact sentence between filler sentences; an inline advertisement
// interrupts the prose.
// With w.background > 0, a background paragraph of fillers drawn from bg
// closes the page.
func (w *World) entityPage(rng, bg *rand.Rand, e *entity) *page {
	s := e.site
	sec := sectionOf(s, e.kind)
	crumbs := []anchor{{sec.path, sec.title}}
	for _, g := range sec.groups {
		if slices.Contains(g.entities, e) {
			crumbs = append(crumbs, anchor{g.path, g.label})
		}
	}
	crumbs = append(crumbs, anchor{e.path, e.name})
	ads := w.ads(rng, s)
	c := chrome{site: s, title: e.name, crumbs: crumbs, ads: ads, related: relatedOf(rng, e, sec)}
	fill := func() string {
		return strings.ReplaceAll(fillers[rng.IntN(len(fillers))], "{N}", e.name)
	}
	return c.render(e.path, func(b *builder) {
		b.block("h1", "", func() { b.text(e.name) })
		lede := strings.ReplaceAll(ledes[e.kind], "{N}", e.name)
		for _, f := range e.facts {
			lede = strings.ReplaceAll(lede, "{"+f.Relation+"}", f.Object)
		}
		b.para("lede", lede)
		if len(e.twins) > 0 {
			b.block("p", "disambiguation", func() {
				b.text("Not to be confused with ")
				for i, t := range e.twins {
					if i > 0 {
						b.text(" or ")
					}
					b.link(t.path, t.name)
				}
				b.text(".")
			})
		}
		b.block("table", "infobox", func() {
			for i, f := range e.facts {
				b.block("tr", "", func() {
					b.raw("<th>")
					b.text(capitalize(f.Relation) + ": ")
					b.raw("</th><td>")
					objectText(b, f, e.objects[i])
					b.raw("</td>")
				})
			}
		})
		for i, f := range e.facts {
			b.block("p", "", func() {
				if rng.IntN(3) > 0 {
					b.text(fill() + " ")
				}
				b.text("The " + f.Relation + " of " + f.Subject + " is ")
				objectText(b, f, e.objects[i])
				b.text(".")
				if rng.IntN(2) == 0 {
					b.text(" " + fill())
				}
			})
			if i == 1 {
				b.block("aside", "ad inline-ad", func() {
					b.para("ad-label", "Sponsored")
					b.para("ad-copy", w.ads(rng, s)[0])
				})
			}
		}
		if w.background > 0 {
			b.block("h2", "", func() { b.text("Background") })
			sentences := make([]string, w.background)
			for i := range sentences {
				sentences[i] = strings.ReplaceAll(fillers[bg.IntN(len(fillers))], "{N}", e.name)
			}
			b.para("background", strings.Join(sentences, " "))
		}
	})
}

// objectText writes a fact's object, linked to its page when it is an
// entity.
func objectText(b *builder, f Fact, obj *entity) {
	if obj != nil {
		b.link(obj.path, f.Object)
		return
	}
	b.text(f.Object)
}

func sectionOf(s *site, k kind) *section {
	for _, sec := range s.sections {
		if sec.kind == k {
			return sec
		}
	}
	return nil
}

// relatedOf lists the pages of an entity's object entities, then up to
// three neighbours from its own section.
func relatedOf(rng *rand.Rand, e *entity, sec *section) []anchor {
	var out []*entity
	for _, o := range e.objects {
		if o != nil && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	for range 3 {
		n := sec.entities[rng.IntN(len(sec.entities))]
		if n != e && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return anchorsOf(out)
}
