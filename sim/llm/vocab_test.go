package llm

import (
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/sim/llm/internal/vocabgen/corpus"
	"github.com/mgrpo/mgrpo/sim/web"
)

// TestCorpusVocabCovers checks that the frozen vocab_corpus.txt still
// covers the words vocabgen finds in today's sim web, prompts and policy
// and tool text. The file is frozen on purpose, as a real model's
// tokenizer is: regenerating it renumbers the sim's token ids and so
// changes every run's bytes, which must be a deliberate change (run
// `go generate ./sim/llm`, then update the identity sums), never a side
// effect of editing a message. New words are spelt in fragments until
// then; the check fails once they are more than a tenth of the list,
// which would make the sim's token counts drift from a real tokenizer's.
func TestCorpusVocabCovers(t *testing.T) {
	want, err := corpus.WordList("../..")
	if err != nil {
		t.Fatal(err)
	}
	frozen := map[string]bool{}
	for _, w := range corpusWords() {
		frozen[w] = true
	}
	var missing []string
	total := 0
	for _, line := range strings.Split(string(want), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		total++
		if !frozen[line] {
			missing = append(missing, line)
		}
	}
	t.Logf("%d of %d words vocabgen finds today are not in the frozen vocabulary: %v", len(missing), total, missing)
	if len(missing)*10 > total {
		t.Fatalf("%d of %d words are missing from vocab_corpus.txt: regenerate it deliberately (`go generate ./sim/llm`) and update the identity sums (cmd/mgrpo: go test -run Identity -args -update-identity)", len(missing), total)
	}
}

// TestTokenizerDensity checks the sim's token counts stay realistic on the
// text it serves: a real model's tokenizer gives about four bytes a token
// on English prose, a little less on pages full of names and numbers.
func TestTokenizerDensity(t *testing.T) {
	tok := NewTokenizer()
	// A seed vocabgen does not sample, with background paragraphs.
	w, err := web.Generate(web.Config{Seed: 11, BackgroundSentences: 20})
	if err != nil {
		t.Fatal(err)
	}
	var bytes, tokens int
	for _, p := range w.Paths() {
		text, _ := w.PageText(p)
		ids := tok.Encode(text)
		if back, err := tok.Decode(ids); err != nil || back != text {
			t.Fatalf("%s does not round-trip: %v", p, err)
		}
		bytes += len(text)
		tokens += len(ids)
	}
	if d := float64(bytes) / float64(tokens); d < 3.4 || d > 5 {
		t.Errorf("sim web pages: %.2f bytes a token, want 3.4 to 5 (%d bytes, %d tokens)", d, bytes, tokens)
	} else {
		t.Logf("sim web pages: %.2f bytes a token", d)
	}
}
