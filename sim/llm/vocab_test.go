package llm

import (
	"testing"

	"github.com/mgrpo/mgrpo/sim/llm/internal/vocabgen/corpus"
	"github.com/mgrpo/mgrpo/sim/web"
)

// TestCorpusVocabCurrent checks that vocab_corpus.txt is what vocabgen
// writes from today's sim web, prompts and policy text.
func TestCorpusVocabCurrent(t *testing.T) {
	want, err := corpus.WordList("../..")
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != vocabCorpus {
		t.Fatal("vocab_corpus.txt is stale: run `go generate ./sim/llm` and commit the result")
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
