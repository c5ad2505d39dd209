package visit

import (
	"strings"
	"testing"
)

// articleHTML is a page readability recognises as an article.
func articleHTML(body string) string {
	p := "<p>" + body + " " + strings.Repeat("More words about the subject at hand, for length. ", 12) + "</p>"
	return "<html><head><title>T</title></head><body><nav>Home | About</nav><article><h1>Heading</h1>" + p + p + "</article></body></html>"
}

// TestExtractHTMLEncodings checks both parsing paths: UTF-8 pages are read
// as UTF-8 (normalized to NFC, soft hyphens dropped, as readability's own
// parser does), and pages in a legacy charset still go through charset
// detection rather than coming out as replacement characters.
func TestExtractHTMLEncodings(t *testing.T) {
	_, md, err := ExtractHTML([]byte(articleHTML("Cafe\u0301 na\u00efve r\u00e9sum\u00e9 \u6771\u4eac hy\u00adphen")), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Café naïve résumé 東京 hyphen"} {
		if !strings.Contains(md, want) {
			t.Errorf("UTF-8 page: %q not in %q", want, md)
		}
	}
	if strings.Contains(md, "Home | About") {
		t.Errorf("navigation kept: %q", md)
	}

	latin1 := []byte(articleHTML("Caf\xe9 cr\xe8me br\xfbl\xe9e"))
	_, md, err = ExtractHTML(latin1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(md, '\uFFFD') || !strings.Contains(md, "Café crème brûlée") {
		t.Errorf("Latin-1 page decoded wrongly: %q", md)
	}
}
