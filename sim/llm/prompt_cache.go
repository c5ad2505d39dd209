package llm

import (
	"fmt"
	"strings"
	"sync"

	"github.com/mgrpo/mgrpo/sim/llm/internal/cache"
)

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
// text, as uint16s (the vocabulary is smaller than 65,536), in a
// cache.Cache bounded to maxBytes: an entry costs its text's length plus
// two bytes a token plus the cache's overhead, about 1.5 times the text
// (the tokenizer averages about four bytes a token). It is safe for
// concurrent use.
type promptCache struct {
	tok  *Tokenizer
	segs *cache.Cache[string, []uint16]

	// idsPool recycles Encode's results (*[]int): a long prompt's ids are
	// tens of kilobytes, allocated and zeroed on every request otherwise.
	idsPool sync.Pool
}

// newPromptCache returns a cache of tok's encodings of at most maxBytes.
func newPromptCache(tok *Tokenizer, maxBytes int64) *promptCache {
	if n := tok.VocabSize(); n > 1<<16 {
		panic(fmt.Sprintf("prompt cache: vocabulary of %d ids does not fit uint16", n))
	}
	return &promptCache{tok: tok, segs: cache.New[string, []uint16](maxBytes)}
}

// Encode returns tok.Encode(prompt), in a slice the caller owns. The
// segments' ids are gathered first so that the result is filled in one go;
// a caller done with it may hand it to release for reuse.
func (c *promptCache) Encode(prompt string) []int {
	var segsBuf [64][]uint16
	segs, n := segsBuf[:0], 0
	var tail []int // the ids after the last <|im_end|>
	for prompt != "" {
		end := strings.Index(prompt, IMEnd)
		if end < 0 {
			tail, prompt = c.tok.Encode(prompt), ""
			break
		}
		end += len(IMEnd)
		seg := c.segment(prompt[:end])
		prompt = prompt[end:]
		segs = append(segs, seg)
		n += len(seg)
	}
	n += len(tail)
	var ids []int
	if p, ok := c.idsPool.Get().(*[]int); ok && cap(*p) >= n {
		ids = (*p)[:n]
	} else {
		ids = make([]int, n)
	}
	i := 0
	for _, seg := range segs {
		for _, id := range seg {
			ids[i] = int(id)
			i++
		}
	}
	copy(ids[i:], tail)
	return ids
}

// segment returns the shared, read-only ids of seg.
func (c *promptCache) segment(seg string) []uint16 {
	if ids, ok := c.segs.Get(seg); ok {
		return ids
	}
	wide := c.tok.Encode(seg)
	ids := make([]uint16, len(wide))
	for i, id := range wide {
		ids[i] = uint16(id)
	}
	// A copy of the key, so the cache does not pin the whole prompt.
	c.segs.Add(strings.Clone(seg), ids, len(seg)+2*len(ids))
	return ids
}

// release gives ids from Encode, which nothing may use any more, back for
// reuse.
func (c *promptCache) release(ids []int) {
	if cap(ids) <= maxPooledBytes/8 {
		c.idsPool.Put(&ids)
	}
}
