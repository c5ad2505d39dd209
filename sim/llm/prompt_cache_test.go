package llm

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/sim/llm/internal/cache"
	"github.com/mgrpo/mgrpo/sim/web"
)

// promptCacheStats returns the counters of s's prompt cache.
func promptCacheStats(s *Server) cache.Stats { return s.pc.segs.Stats() }

// checkPromptCache fails when the cache's ids for text differ from a whole
// encoding, on a cold and on a warm cache.
func checkPromptCache(t *testing.T, c *promptCache, text string) {
	t.Helper()
	want := c.tok.Encode(text)
	for pass := 0; pass < 2; pass++ {
		if got := c.Encode(text); !slices.Equal(got, want) {
			t.Fatalf("pass %d: Encode(%q)\ngot  %v\nwant %v", pass, text, got, want)
		}
	}
}

// TestPromptCacheMatchesEncode checks the cached prompt encoding against
// the tokenizer on random texts full of markers, partial markers and the
// turns of growing conversations.
func TestPromptCacheMatchesEncode(t *testing.T) {
	c := newPromptCache(NewTokenizer(), 1<<20)
	pieces := []string{IMEnd, IMStart, EndOfText, ThinkOpen, ThinkClose, ToolCallOpen, ToolCallClose, ToolResponseOpen, ToolResponseClose,
		"<|im_e", "<|im_end|", "<", "|", ">", "<|", "\n", " ", "  ", "user", "assistant", " hello", "Velmora", "123456", "{\"a\":", "\xff", "é", "😀"}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 5000; i++ {
		var b strings.Builder
		for k := r.IntN(30); k > 0; k-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		checkPromptCache(t, c, b.String())
	}
	tmpl := Template{}
	var msgs []Message
	for turn := 0; turn < 20; turn++ {
		msgs = append(msgs, Message{Role: "user", Content: strings.Repeat("Who founded Velmora Labs? <think> ", turn+1)},
			Message{Role: "assistant", Content: "I will search.<|im_end" + strings.Repeat(" x", turn)})
		prompt, err := tmpl.Render(msgs, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		checkPromptCache(t, c, prompt)
	}
}

// FuzzPromptCache compares the cached encoding with the tokenizer's.
func FuzzPromptCache(f *testing.F) {
	f.Add("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "<think>x</think>")
	f.Add("<|im_end|><|im_end|>", "<|im_e")
	c := newPromptCache(NewTokenizer(), 1<<20)
	f.Fuzz(func(t *testing.T, a, b string) {
		checkPromptCache(t, c, a)
		checkPromptCache(t, c, a+b)
		checkPromptCache(t, c, a+IMEnd+b)
	})
}

// TestCacheSizeKeepsBytes plays many conversations against a server with
// the default cache size and mirrors every request to one whose caches
// hold a few entries each (so they evict, and refuse large turns, all the
// time): the responses must be the same bytes.
func TestCacheSizeKeepsBytes(t *testing.T) {
	w, err := web.Generate(web.Config{Seed: 11, Questions: 20})
	if err != nil {
		t.Fatalf("generate world: %v", err)
	}
	s, _ := MustServer(t, testConfig(DialectVLLM))
	tiny := testConfig(DialectVLLM)
	tiny.CacheBytes = 64 << 10
	m, _ := MustServer(t, tiny)
	p := newManyConvPlayer(t, s, w, 40)
	p.mirror = m.Handler()
	calls := 400
	if testing.Short() {
		calls = 100
	}
	for range calls {
		p.step()
	}
	if st := m.pc.segs.Stats(); st.Rotations == 0 {
		t.Errorf("the small prompt cache never evicted: %+v", st)
	}
}
