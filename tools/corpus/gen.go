package corpus

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
)

// GenerateJSONL writes n synthetic documents to w for tests and
// benchmarks: words drawn from a Zipf distribution over a fixed vocabulary
// (so term statistics resemble prose), titled "<word> <word> <n>", in the
// wiki-18 layout ({id, contents}) when wiki18 is true, else as {id, title,
// text}. The same seed writes the same file.
func GenerateJSONL(w io.Writer, n int, seed uint64, wiki18 bool) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	vocab := vocabulary(20000, rng)
	zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(vocab)-1))
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	var sb strings.Builder
	for i := range n {
		title := fmt.Sprintf("%s %s %d", vocab[zipf.Uint64()], vocab[zipf.Uint64()], i)
		sb.Reset()
		words := 60 + rng.IntN(120)
		for j := range words {
			if j > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(vocab[zipf.Uint64()])
			if j%15 == 14 {
				sb.WriteByte('.')
			}
		}
		id := fmt.Sprint(i)
		var rec any
		if wiki18 {
			rec = map[string]string{"id": id, "contents": `"` + title + `"` + "\n" + sb.String()}
		} else {
			rec = map[string]string{"id": id, "title": title, "text": sb.String()}
		}
		if err := enc.Encode(rec); err != nil {
			return fmt.Errorf("generate corpus: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("generate corpus: %w", err)
	}
	return nil
}

// vocabulary makes n distinct pronounceable words.
func vocabulary(n int, rng *rand.Rand) []string {
	const cons, vows = "bcdfghklmnprstvz", "aeiou"
	seen := map[string]bool{}
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for range 2 + rng.IntN(3) {
			b.WriteByte(cons[rng.IntN(len(cons))])
			b.WriteByte(vows[rng.IntN(len(vows))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}
