package bench

import (
	"crypto/sha256"
	"encoding/hex"
)

// Benchmark names, as used on the command line and in results.
const (
	GAIA        = "gaia"
	WebWalkerQA = "webwalkerqa"
	XBench      = "xbench"
	JSONL       = "jsonl"
)

// Item is one benchmark question with its reference answer, in the form every loader produces.
//
// Category fields are empty when the benchmark has no such notion. When Sensitive is true (xbench) the
// Question and Answer hold decrypted text that must stay in memory: results, logs and files carry the ID
// and Hash only.
type Item struct {
	// ID identifies the question within its benchmark file.
	ID string
	// Benchmark is one of the benchmark name constants.
	Benchmark string
	// Question is the text given to the agent.
	Question string
	// Answer is the reference answer.
	Answer string
	// Level is GAIA's difficulty level ("1", "2" or "3").
	Level string
	// Type is WebWalkerQA's type (single_source or multi_source).
	Type string
	// Difficulty is WebWalkerQA's difficulty_level (easy, medium or hard).
	Difficulty string
	// Lang is the question's language code when the benchmark records one.
	Lang string
	// Domain is WebWalkerQA's domain.
	Domain string
	// Attachment is the path of the question's attached file, resolved next to the metadata; empty
	// when the question has none.
	Attachment string
	// Extra carries the remaining published fields (annotator metadata, root URL, golden path…), never
	// decrypted text.
	Extra map[string]any
	// Sensitive marks items whose plain text must never be written out.
	Sensitive bool
}

// Hash returns a stable hex digest of the item's question and answer. It identifies the exact text
// an eval ran on without revealing it, so results of sensitive benchmarks can still be matched.
func (it Item) Hash() string {
	h := sha256.New()
	h.Write([]byte(it.Question))
	h.Write([]byte{0})
	h.Write([]byte(it.Answer))
	return hex.EncodeToString(h.Sum(nil))[:16]
}
