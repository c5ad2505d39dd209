package llm

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names of the tokenizer's special tokens. Special tokens delimit chat turns
// and are dropped by DecodeSkipSpecial, as a Qwen tokenizer does with
// skip_special_tokens.
const (
	EndOfText = "<|endoftext|>"
	IMStart   = "<|im_start|>"
	IMEnd     = "<|im_end|>"
)

// Added tokens: single ids like the special tokens, but part of the visible
// text (Qwen3 keeps <think> and <tool_call> in decoded output so that the
// reasoning and tool-call parsers can find them).
const (
	ThinkOpen         = "<think>"
	ThinkClose        = "</think>"
	ToolCallOpen      = "<tool_call>"
	ToolCallClose     = "</tool_call>"
	ToolResponseOpen  = "<tool_response>"
	ToolResponseClose = "</tool_response>"
)

// ErrOutOfVocab is returned (wrapped) when a token id is not in the
// vocabulary.
var ErrOutOfVocab = errors.New("token id out of vocabulary")

// maxPieceBytes bounds the longest vocabulary entry, which bounds the work of
// the greedy longest-match.
const maxPieceBytes = 24

// Tokenizer is the simulated model's deterministic, reversible tokenizer.
//
// Ids 0–255 are the raw bytes, so every string (even invalid UTF-8) encodes
// and Decode(Encode(s)) == s always. Then come word pieces (common English
// and markup pieces, with and without a leading space), then the added and
// special tokens, then the words of the simulated world's own text
// (vocab_corpus.txt, generated), so that token counts come close to a real
// model's: about 4 bytes a token on the sim web's pages, where the
// hand-written words alone gave 2.1. Encoding first splits out special and added tokens, then
// pre-splits the rest into words, numbers, punctuation runs and whitespace
// runs (a word keeps one leading space), then covers each piece by greedy
// longest match. Because pieces never span a special token, encoding a
// rendered chat template equals concatenating the encodings of its parts,
// which is what makes a replayed conversation's prompt extend the previous
// turn's prompt and completion exactly.
//
// A Tokenizer is immutable after NewTokenizer and safe for concurrent use.
type Tokenizer struct {
	pieces  []string       // id → text
	ids     map[string]int // text → id (pieces and added/special tokens)
	special map[int]bool   // ids dropped by DecodeSkipSpecial
	markers []string       // added and special tokens, longest first
	// shown and rawInts are Token's piece and bytes (as ints) of every id,
	// computed once: logprobs report them for every output token.
	shown   []string
	rawInts [][]int
	trie    *pieceTrie // the word pieces, for encodePiece
}

// NewTokenizer returns the one fixed vocabulary of the simulated model.
func NewTokenizer() *Tokenizer {
	t := &Tokenizer{ids: make(map[string]int), special: make(map[int]bool)}
	for b := 0; b < 256; b++ {
		t.pieces = append(t.pieces, string([]byte{byte(b)}))
	}
	add := func(p string) {
		if _, ok := t.ids[p]; ok || len(p) < 2 || len(p) > maxPieceBytes {
			return
		}
		t.ids[p] = len(t.pieces)
		t.pieces = append(t.pieces, p)
	}
	for _, w := range strings.Fields(vocabWords) {
		for _, form := range []string{w, upperFirst(w)} {
			add(form)
			add(" " + form)
		}
	}
	for _, p := range strings.Fields(vocabFragments) {
		add(p)
		add(" " + p)
	}
	for _, p := range markupPieces {
		add(p)
	}
	for b := 0; b < 256; b++ {
		t.ids[string([]byte{byte(b)})] = b
	}
	for _, m := range []string{ThinkOpen, ThinkClose, ToolCallOpen, ToolCallClose, ToolResponseOpen, ToolResponseClose} {
		t.ids[m] = len(t.pieces)
		t.pieces = append(t.pieces, m)
		t.markers = append(t.markers, m)
	}
	for _, m := range []string{EndOfText, IMStart, IMEnd} {
		t.ids[m] = len(t.pieces)
		t.special[len(t.pieces)] = true
		t.pieces = append(t.pieces, m)
		t.markers = append(t.markers, m)
	}
	// Later pieces come after the special tokens, so that the ids above
	// keep their meaning: capitalised fragments and a space with one
	// letter, as byte-pair vocabularies have, so that an unknown
	// capitalised name does not spend a token on its space; then the
	// corpus words.
	for _, p := range strings.Fields(vocabFragments) {
		add(upperFirst(p))
		add(" " + upperFirst(p))
	}
	for c := 'a'; c <= 'z'; c++ {
		add(" " + string(c))
		add(" " + string(c-'a'+'A'))
	}
	for _, w := range corpusWords() {
		for _, form := range []string{w, upperFirst(w)} {
			add(form)
			add(" " + form)
		}
	}
	t.trie = newPieceTrie(t.ids, func(id int) bool { return id >= 256 && !t.isMarkerID(id) })
	t.shown = make([]string, len(t.pieces))
	t.rawInts = make([][]int, len(t.pieces))
	for id, p := range t.pieces {
		t.shown[id] = strings.ToValidUTF8(p, "\uFFFD")
		t.rawInts[id] = make([]int, len(p))
		for i := range len(p) {
			t.rawInts[id][i] = int(p[i])
		}
	}
	return t
}

// VocabSize returns the number of token ids; valid ids are 0…VocabSize()-1.
func (t *Tokenizer) VocabSize() int { return len(t.pieces) }

// SpecialID returns the id of a special or added token such as IMEnd, or -1
// when name is not one.
func (t *Tokenizer) SpecialID(name string) int {
	for _, m := range t.markers {
		if m == name {
			return t.ids[m]
		}
	}
	return -1
}

// IsSpecial reports whether id is a special token (dropped when decoding with
// DecodeSkipSpecial).
func (t *Tokenizer) IsSpecial(id int) bool { return t.special[id] }

// Token returns the text of one token and its raw bytes, as reported in
// logprobs (`token` and `bytes`); ok is false for an id out of vocabulary. A
// byte token that is not valid UTF-8 on its own has a piece with the Unicode
// replacement character, like the servers show it.
func (t *Tokenizer) Token(id int) (piece string, raw []byte, ok bool) {
	if id < 0 || id >= len(t.pieces) {
		return "", nil, false
	}
	p := t.pieces[id]
	return strings.ToValidUTF8(p, "\uFFFD"), []byte(p), true
}

// logprobToken returns Token's piece of id and its raw bytes as ints, the
// `token` and `bytes` of a logprob entry, without allocating. The slice is
// shared and must not be modified. ok is false out of vocabulary.
func (t *Tokenizer) logprobToken(id int) (piece string, raw []int, ok bool) {
	if id < 0 || id >= len(t.pieces) {
		return "", nil, false
	}
	return t.shown[id], t.rawInts[id], true
}

// Encode turns text into token ids. Special and added tokens written in the
// text are recognised as single ids.
func (t *Tokenizer) Encode(text string) []int {
	ids := make([]int, 0, len(text)/3+1)
	for text != "" {
		pos, marker := t.nextMarker(text)
		t.encodeOrdinary(text[:pos], &ids)
		if marker == "" {
			break
		}
		ids = append(ids, t.ids[marker])
		text = text[pos+len(marker):]
	}
	return ids
}

// nextMarker finds the earliest special or added token in text; it returns
// len(text) and "" when there is none.
func (t *Tokenizer) nextMarker(text string) (int, string) {
	best, marker := len(text), ""
	for i := strings.IndexByte(text, '<'); i >= 0 && i < best; {
		for _, m := range t.markers {
			if strings.HasPrefix(text[i:], m) {
				return i, m
			}
		}
		next := strings.IndexByte(text[i+1:], '<')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return best, marker
}

// encodeOrdinary encodes text that holds no special or added token.
func (t *Tokenizer) encodeOrdinary(text string, ids *[]int) {
	for text != "" {
		n := preTokenLen(text)
		t.encodePiece(text[:n], ids)
		text = text[n:]
	}
}

// encodePiece covers one pre-token by greedy longest match; single bytes
// always match, so it always succeeds.
func (t *Tokenizer) encodePiece(p string, ids *[]int) {
	for p != "" {
		id, n := t.trie.longest(p)
		if n == 0 {
			id, n = int(p[0]), 1
		}
		*ids = append(*ids, id)
		p = p[n:]
	}
}

func (t *Tokenizer) isMarkerID(id int) bool { return id >= len(t.pieces)-len(t.markers) }

// Character classes of the pre-tokenizer.
const (
	classSpace = iota
	classLetter
	classDigit
	classOther
)

func classOf(r rune) int {
	switch {
	case r == utf8.RuneError:
		return classOther
	case unicode.IsSpace(r):
		return classSpace
	case unicode.IsLetter(r) || unicode.IsMark(r):
		return classLetter
	case unicode.IsDigit(r):
		return classDigit
	default:
		return classOther
	}
}

// preTokenLen returns the byte length of the first pre-token of text: one
// optional leading space followed by a run of letters, digits or other
// symbols; or a run of whitespace. Digits form runs of at most three, as in
// Qwen's pre-tokenizer. Invalid UTF-8 bytes are "other" symbols.
func preTokenLen(text string) int {
	start := 0
	if text[0] == ' ' && len(text) > 1 {
		r, _ := utf8.DecodeRuneInString(text[1:])
		if c := classOf(r); c != classSpace {
			start = 1
		}
	}
	r, size := utf8.DecodeRuneInString(text[start:])
	class := classOf(r)
	n, count := start+size, 1
	for n < len(text) {
		r, size = utf8.DecodeRuneInString(text[n:])
		if classOf(r) != class || (class == classDigit && count == 3) {
			break
		}
		n += size
		count++
	}
	return n
}

// Decode turns ids back into text, special tokens included. An id out of
// vocabulary is an error naming the id and its position.
func (t *Tokenizer) Decode(ids []int) (string, error) { return t.decode(ids, false) }

// DecodeSkipSpecial is Decode without the special tokens (<|im_start|>,
// <|im_end|>, <|endoftext|>); added tokens such as <think> stay.
func (t *Tokenizer) DecodeSkipSpecial(ids []int) (string, error) { return t.decode(ids, true) }

func (t *Tokenizer) decode(ids []int, skipSpecial bool) (string, error) {
	var b strings.Builder
	for i, id := range ids {
		if id < 0 || id >= len(t.pieces) {
			return "", fmt.Errorf("token %d at index %d (vocabulary size %d): %w", id, i, len(t.pieces), ErrOutOfVocab)
		}
		if skipSpecial && t.special[id] {
			continue
		}
		b.WriteString(t.pieces[id])
	}
	return b.String(), nil
}

func upperFirst(w string) string {
	r, size := utf8.DecodeRuneInString(w)
	return string(unicode.ToUpper(r)) + w[size:]
}
