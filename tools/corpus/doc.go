// Package corpus builds, opens and serves local full-text corpora for the
// `local` and `retriever` search providers: a bleve index built from JSON
// Lines in Search-R1's wiki-18 layout ({id, contents}, title on the first
// line of contents) or as {id|url, title, text}, queried in process or over
// Search-R1's POST /retrieve API so Python trainers and the farm share one
// retriever.
package corpus

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Doc is one corpus document. URL is the page a document came from, kept
// when its line gave one (with or without an id).
type Doc struct {
	ID    string `json:"id"`
	URL   string `json:"url,omitempty"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// Link is what a search result points at: the document's URL when it has
// one (a model can visit it), else its id.
func (d Doc) Link() string {
	if d.URL != "" {
		return d.URL
	}
	return d.ID
}

// Contents renders d in Search-R1's layout: the quoted title on the first
// line, the text after it.
func (d Doc) Contents() string {
	if d.Title == "" {
		return d.Text
	}
	return `"` + d.Title + `"` + "\n" + d.Text
}

// ErrBadLine marks a JSONL line that is not a document.
var ErrBadLine = errors.New("bad corpus line")

// ParseLine decodes one JSONL line in either layout. The id is "id" (a
// string or a number) or else "url"; the text is "text" or else "contents",
// whose first line is the title when no "title" is given.
func ParseLine(line []byte) (Doc, error) {
	var raw struct {
		ID       json.RawMessage `json:"id"`
		URL      string          `json:"url"`
		Title    string          `json:"title"`
		Text     string          `json:"text"`
		Contents string          `json:"contents"`
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return Doc{}, fmt.Errorf("%w: %w", ErrBadLine, err)
	}
	d := Doc{URL: raw.URL, Title: raw.Title, Text: raw.Text}
	if len(raw.ID) > 0 && string(raw.ID) != "null" {
		var s string
		if json.Unmarshal(raw.ID, &s) == nil {
			d.ID = s
		} else {
			var n json.Number
			if err := json.Unmarshal(raw.ID, &n); err != nil {
				return Doc{}, fmt.Errorf("%w: id is neither string nor number", ErrBadLine)
			}
			d.ID = n.String()
		}
	}
	if d.ID == "" {
		d.ID = raw.URL
	}
	if d.ID == "" {
		return Doc{}, fmt.Errorf("%w: no id or url", ErrBadLine)
	}
	if d.Text == "" && raw.Contents != "" {
		if d.Title == "" {
			title, text, _ := strings.Cut(raw.Contents, "\n")
			title = strings.TrimSpace(title)
			if len(title) >= 2 && title[0] == '"' && title[len(title)-1] == '"' {
				title = title[1 : len(title)-1]
			}
			d.Title, d.Text = title, strings.TrimSpace(text)
		} else {
			d.Text = raw.Contents
		}
	}
	if d.Title == "" && d.Text == "" {
		return Doc{}, fmt.Errorf("%w: document %s has no text", ErrBadLine, d.ID)
	}
	return d, nil
}
