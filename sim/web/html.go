package web

import (
	"html"
	"strings"
)

// page is one served document: its HTML and the visible text a crude
// fetcher would extract from it (boilerplate included).
type page struct {
	path  string
	title string
	html  string
	text  string
	site  *site // nil for the web's index page
}

// builder writes a page's HTML and its visible text side by side, so the
// two can never disagree: every visible string goes through text or link,
// markup through raw, and every block ends a line of text.
type builder struct {
	h strings.Builder
	t strings.Builder
}

// raw writes markup that has no visible text.
func (b *builder) raw(s string) { b.h.WriteString(s) }

// text writes visible text.
func (b *builder) text(s string) {
	b.h.WriteString(html.EscapeString(s))
	b.t.WriteString(s)
}

// link writes a visible hyperlink.
func (b *builder) link(href, s string) {
	b.h.WriteString(`<a href="` + html.EscapeString(href) + `">`)
	b.text(s)
	b.h.WriteString("</a>")
}

// block wraps fn's output in an element and ends a line of text after it.
func (b *builder) block(tag, class string, fn func()) {
	b.h.WriteString("<" + tag)
	if class != "" {
		b.h.WriteString(` class="` + class + `"`)
	}
	b.h.WriteString(">")
	fn()
	b.h.WriteString("</" + tag + ">\n")
	if t := b.t.String(); t != "" && !strings.HasSuffix(t, "\n") {
		b.t.WriteByte('\n')
	}
}

// para writes a paragraph of plain text.
func (b *builder) para(class, s string) { b.block("p", class, func() { b.text(s) }) }

// linkList writes a list of links.
func (b *builder) linkList(class string, links []anchor) {
	b.block("ul", class, func() {
		for _, l := range links {
			b.block("li", "", func() { b.link(l.href, l.text) })
		}
	})
}

type anchor struct{ href, text string }

// chrome is the boilerplate around a site page's main content.
type chrome struct {
	site    *site
	title   string
	crumbs  []anchor // breadcrumb trail after Home
	ads     [2]string
	related []anchor
}

// render writes a complete site page: cookie banner, header, navigation,
// breadcrumb, the main content written by body, an advertisement, related
// links and the footer.
func (c chrome) render(path string, body func(b *builder)) *page {
	var b builder
	s := c.site
	b.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
		html.EscapeString(c.title+" | "+s.name) + "</title>\n</head>\n<body>\n")
	b.block("div", "cookie-banner", func() {
		b.text("We use cookies to remember your preferences and to measure traffic. ")
		b.raw("<button>")
		b.text("Accept all")
		b.raw("</button>")
		b.text(" ")
		b.raw("<button>")
		b.text("Manage settings")
		b.raw("</button>")
	})
	b.block("header", "site-header", func() {
		b.block("div", "logo", func() { b.link(s.root, s.name) })
		b.para("tagline", s.theme.tagline)
	})
	b.block("nav", "main-nav", func() {
		links := []anchor{{s.root, "Home"}}
		for _, sec := range s.sections {
			links = append(links, anchor{sec.path, sec.title})
		}
		links = append(links, anchor{s.root + "about/", "About"})
		b.linkList("menu", links)
	})
	b.block("nav", "breadcrumb", func() {
		b.link(s.root, "Home")
		for _, cr := range c.crumbs {
			b.text(" / ")
			b.link(cr.href, cr.text)
		}
	})
	b.block("main", "", func() { b.block("article", "content", func() { body(&b) }) })
	b.block("aside", "ad", func() {
		b.para("ad-label", "Advertisement")
		b.para("ad-copy", c.ads[0])
	})
	if len(c.related) > 0 {
		b.block("aside", "related", func() {
			b.block("h2", "", func() { b.text("Related pages") })
			b.linkList("related-links", c.related)
		})
	}
	b.block("footer", "site-footer", func() {
		b.para("", "Copyright "+s.name+". All rights reserved.")
		b.linkList("footer-links", []anchor{{s.root + "about/", "About us"}, {"/", "More sites"}})
		b.para("newsletter", c.ads[1])
	})
	b.raw("</body>\n</html>\n")
	return &page{path: path, title: c.title + " | " + s.name, html: b.h.String(), text: b.t.String(), site: s}
}

// indexPage renders the web's own front page, which lists every site.
func indexPage(sites []*site) *page {
	var b builder
	b.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Synthetic web</title>\n</head>\n<body>\n")
	b.block("main", "", func() {
		b.block("h1", "", func() { b.text("Synthetic web") })
		b.para("", "An offline web generated from a seed. Every site below is served by this host.")
		b.block("ul", "sites", func() {
			for _, s := range sites {
				b.block("li", "", func() {
					b.link(s.root, s.name)
					b.text(" (" + s.theme.domain + "): " + s.theme.tagline)
				})
			}
		})
	})
	b.raw("</body>\n</html>\n")
	return &page{path: "/", title: "Synthetic web", html: b.h.String(), text: b.t.String()}
}

// notFoundHTML is the body of the 404 page.
const notFoundHTML = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Page not found</title>\n</head>\n<body>\n" +
	"<main><h1>Page not found</h1>\n<p>The page you asked for does not exist on this web. " +
	"<a href=\"/\">Back to the list of sites</a>.</p></main>\n</body>\n</html>\n"
