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

	// idsPool recycles Encode's results (*[]int): a long prompt's ids are
	// tens of kilobytes, allocated and zeroed on every request otherwise.
	idsPool sync.Pool
}

func newPromptCache(tok *Tokenizer) *promptCache {
	return &promptCache{tok: tok, segs: make(map[string][]int)}
}

// Encode returns tok.Encode(prompt), in a slice the caller owns. The
// segments' ids are gathered first so that the result is filled in one go;
// a caller done with it may hand it to release for reuse.
func (c *promptCache) Encode(prompt string) []int {
	var segsBuf [64][]int
	segs, n := segsBuf[:0], 0
	for prompt != "" {
		var seg []int
		if end := strings.Index(prompt, IMEnd); end < 0 {
			seg, prompt = c.tok.Encode(prompt), ""
		} else {
			end += len(IMEnd)
			seg, prompt = c.segment(prompt[:end]), prompt[end:]
		}
		segs = append(segs, seg)
		n += len(seg)
	}
	var ids []int
	if p, ok := c.idsPool.Get().(*[]int); ok && cap(*p) >= n {
		ids = (*p)[:0]
	} else {
		ids = make([]int, 0, n)
	}
	for _, seg := range segs {
		ids = append(ids, seg...)
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

// release gives ids from Encode, which nothing may use any more, back for
// reuse.
func (c *promptCache) release(ids []int) {
	if cap(ids) <= maxPooledBytes/8 {
		c.idsPool.Put(&ids)
	}
}
