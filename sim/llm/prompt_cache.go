package llm

import (
	"strings"
	"sync"
)

// maxCachedSegments bounds a promptCache; when full it starts over.
const maxCachedSegments = 8192

// promptCache encodes rendered chat prompts, reusing the ids of the turns a
// conversation sent before, like vLLM's prefix cache: each turn of a
// conversation's prompt is sent again with every later turn, and tokenizing
// the whole prompt was a large part of a request's cost.
//
// The prompt is cut after every <|im_end|>. The tokenizer splits out special
// tokens before anything else, no marker holds a '<' after its first byte,
// and no marker but <|im_end|> starts with "<|im_e", so text ending with
// <|im_end|> tokenizes the same whatever follows it:
// Encode(a+b) == Encode(a)+Encode(b). Each segment's ids are cached by its
// text. It is safe for concurrent use.
type promptCache struct {
	tok  *Tokenizer
	mu   sync.Mutex
	segs map[string][]int
}

func newPromptCache(tok *Tokenizer) *promptCache {
	return &promptCache{tok: tok, segs: make(map[string][]int)}
}

// Encode returns tok.Encode(prompt), in a new slice.
func (c *promptCache) Encode(prompt string) []int {
	ids := make([]int, 0, len(prompt)/3+1)
	for prompt != "" {
		n := strings.Index(prompt, IMEnd)
		if n < 0 {
			return append(ids, c.tok.Encode(prompt)...)
		}
		n += len(IMEnd)
		ids = append(ids, c.segment(prompt[:n])...)
		prompt = prompt[n:]
	}
	return ids
}

// segment returns the shared, read-only ids of seg.
func (c *promptCache) segment(seg string) []int {
	c.mu.Lock()
	ids, ok := c.segs[seg]
	c.mu.Unlock()
	if ok {
		return ids
	}
	ids = c.tok.Encode(seg)
	c.mu.Lock()
	if len(c.segs) >= maxCachedSegments {
		clear(c.segs)
	}
	// A copy of the key, so the cache does not pin the whole prompt.
	c.segs[strings.Clone(seg)] = ids
	c.mu.Unlock()
	return ids
}
