package visit

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	readability "codeberg.org/readeck/go-readability/v2"
	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// ExtractHTML returns the title and the main content of an HTML page as
// Markdown. Readability picks the main content (dropping navigation,
// advertisements, banners and footers); when it finds none, the whole body
// is converted instead, so a page is never reported empty just because it
// does not look like an article. Links are made absolute against pageURL.
func ExtractHTML(body []byte, pageURL *url.URL) (title, markdown string, err error) {
	p := readability.NewParser()
	var opts []converter.ConvertOptionFunc
	if pageURL != nil {
		opts = append(opts, converter.WithDomain(pageURL.Scheme+"://"+pageURL.Host))
	}
	art, perr := readable(&p, body, pageURL)
	if perr == nil && art.Node != nil {
		md, cerr := htmltomarkdown.ConvertNode(art.Node, opts...)
		if cerr == nil && len(bytes.TrimSpace(md)) > 0 {
			return clean(art.Title()), tidy(string(md)), nil
		}
	}
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return "", "", fmt.Errorf("parse html: %w", err)
	}
	title = findTitle(doc)
	dropNodes(doc, map[string]bool{"script": true, "style": true, "noscript": true, "template": true, "head": true})
	md, err := htmltomarkdown.ConvertNode(doc, opts...)
	if err != nil {
		return title, "", fmt.Errorf("convert html: %w", err)
	}
	return title, tidy(string(md)), nil
}

// readable runs readability on body. Valid UTF-8 (what the fetcher hands
// over for nearly every page) is parsed directly, with the same Unicode
// normalization readability applies; only other bytes go through
// readability's own charset detection, which costs more than the rest of
// the extraction and can mistake UTF-8 for a legacy charset.
func readable(p *readability.Parser, body []byte, pageURL *url.URL) (readability.Article, error) {
	if !utf8.Valid(body) {
		return p.Parse(bytes.NewReader(body), pageURL)
	}
	softHyphen := runes.Remove(runes.Predicate(func(r rune) bool { return r == '\u00AD' }))
	normalized := transform.NewReader(bytes.NewReader(body), transform.Chain(norm.NFD, softHyphen, norm.NFC))
	doc, err := html.Parse(normalized)
	if err != nil {
		return readability.Article{}, fmt.Errorf("parse html: %w", err)
	}
	return p.ParseAndMutate(doc, pageURL)
}

func findTitle(n *html.Node) string {
	if n.Type == html.ElementNode && n.Data == "title" && n.FirstChild != nil {
		return clean(n.FirstChild.Data)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if t := findTitle(c); t != "" {
			return t
		}
	}
	return ""
}

func dropNodes(n *html.Node, tags map[string]bool) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.ElementNode && tags[c.Data] {
			n.RemoveChild(c)
		} else {
			dropNodes(c, tags)
		}
		c = next
	}
}

func clean(s string) string { return strings.Join(strings.Fields(s), " ") }

// tidy trims trailing spaces and collapses runs of blank lines.
func tidy(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	out := make([]string, 0, len(lines))
	blank := 0
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			blank++
			if blank > 1 {
				continue
			}
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}
