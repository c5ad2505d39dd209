package visit

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// benchPage returns an article page of about size bytes of HTML shaped like
// a news or encyclopedia page: a head with scripts and styles, navigation
// and a sidebar of links around paragraphs of body text with inline links,
// a table and a footer.
func benchPage(size int) []byte {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><title>Example article - Site</title><meta charset="utf-8">`)
	b.WriteString(`<script>var config = {a: 1, b: [1,2,3]}; function f(x) { return x * 2 }</script>`)
	b.WriteString(`<style>body { font-family: sans-serif } .nav a { color: blue }</style></head><body>`)
	b.WriteString(`<header><nav class="nav">`)
	for i := range 30 {
		fmt.Fprintf(&b, `<a href="/section/%d">Section %d</a> `, i, i)
	}
	b.WriteString(`</nav></header><main><article><h1>Example article</h1>`)
	for i := 0; b.Len() < size*9/10; i++ {
		if i%8 == 0 {
			fmt.Fprintf(&b, `<h2>Part %d</h2>`, i/8)
		}
		fmt.Fprintf(&b, `<p>The river delta %d holds a settlement founded by traders in the year %d, according to `+
			`<a href="/wiki/Source_%d">the chronicle</a>; its population grew to %d people by the census that `+
			`followed, and its harbour served <em>three</em> trade routes across the bay.</p>`, i, 1200+i, i, 1000*i+7)
		if i%20 == 19 {
			b.WriteString(`<table><tr><th>Year</th><th>Population</th></tr>`)
			for j := range 5 {
				fmt.Fprintf(&b, `<tr><td>%d</td><td>%d</td></tr>`, 1900+j*10, 5000+j*731)
			}
			b.WriteString(`</table>`)
		}
	}
	b.WriteString(`</article><aside class="sidebar"><ul>`)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, `<li><a href="/related/%d">Related article %d</a></li>`, i, i)
	}
	b.WriteString(`</ul></aside></main><footer>Copyright Example Site. <a href="/privacy">Privacy</a></footer></body></html>`)
	return []byte(b.String())
}

// BenchmarkExtractHTML measures what the visit tool's conversion of one
// fetched page (readability, then Markdown) costs, by page size.
func BenchmarkExtractHTML(b *testing.B) {
	u, _ := url.Parse("https://example.org/article")
	for _, size := range []int{10 << 10, 100 << 10, 500 << 10} {
		page := benchPage(size)
		b.Run(fmt.Sprintf("html=%dKB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(page)))
			var out int
			for b.Loop() {
				_, md, err := ExtractHTML(page, u)
				if err != nil {
					b.Fatal(err)
				}
				out = len(md)
			}
			b.ReportMetric(float64(out)/1024, "markdown-KB")
		})
	}
}
