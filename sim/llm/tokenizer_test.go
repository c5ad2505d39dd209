package llm

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTokenizerRoundTrip(t *testing.T) {
	tok := NewTokenizer()
	tests := []struct {
		name string
		text string
	}{
		{"empty", ""},
		{"english", "The founder of Velmora Labs is Ida Kestrel."},
		{"chatml", IMStart + "user\nWhat is the founding year of Orvane?" + IMEnd + "\n" + IMStart + "assistant\n"},
		{"json tool call", ToolCallOpen + "\n{\"name\": \"search\", \"arguments\": {\"query\": [\"Velmora Labs founder\"]}}\n" + ToolCallClose},
		{"cjk", "北京的人口是多少？"},
		{"invalid utf8", "ab\xff\xfe cd"},
		{"partial marker", "<|im_sta <think <tool_call"},
		{"whitespace runs", "a  b\t\n\n  c   "},
		{"digits", "population 2,345,000 in 1987"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids := tok.Encode(tt.text)
			got, err := tok.Decode(ids)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if got != tt.text {
				t.Errorf("Decode(Encode(%q)) = %q", tt.text, got)
			}
			if again := tok.Encode(got); !slices.Equal(again, ids) {
				t.Errorf("Encode is not canonical: %v then %v", ids, again)
			}
		})
	}
}

func TestTokenizerMarkersAreSingleIDs(t *testing.T) {
	tok := NewTokenizer()
	for _, m := range []string{EndOfText, IMStart, IMEnd, ThinkOpen, ThinkClose, ToolCallOpen, ToolCallClose, ToolResponseOpen, ToolResponseClose} {
		ids := tok.Encode(m)
		if len(ids) != 1 || ids[0] != tok.SpecialID(m) {
			t.Errorf("Encode(%q) = %v, want [%d]", m, ids, tok.SpecialID(m))
		}
	}
	if tok.SpecialID("<nope>") != -1 {
		t.Errorf("SpecialID of an unknown name is not -1")
	}
	text := IMStart + "assistant\n" + ThinkOpen + "\nhm\n" + ThinkClose + "\n\nHi" + IMEnd
	got, err := tok.DecodeSkipSpecial(tok.Encode(text))
	if err != nil {
		t.Fatal(err)
	}
	if want := "assistant\n" + ThinkOpen + "\nhm\n" + ThinkClose + "\n\nHi"; got != want {
		t.Errorf("DecodeSkipSpecial = %q, want %q", got, want)
	}
}

func TestTokenizerEfficiency(t *testing.T) {
	tok := NewTokenizer()
	text := "I need the founder of Velmora Labs. I will search for it and then visit the best result page to confirm the answer."
	ids := tok.Encode(text)
	if ratio := float64(len(text)) / float64(len(ids)); ratio < 3 {
		t.Errorf("%d chars in %d tokens (%.1f chars/token), want at least 3", len(text), len(ids), ratio)
	}
}

func TestDecodeOutOfVocab(t *testing.T) {
	tok := NewTokenizer()
	for _, id := range []int{-1, tok.VocabSize(), 1 << 30} {
		_, err := tok.Decode([]int{1, 2, id})
		if !errors.Is(err, ErrOutOfVocab) {
			t.Fatalf("Decode with id %d: err = %v, want ErrOutOfVocab", id, err)
		}
		if !strings.Contains(err.Error(), "index 2") {
			t.Errorf("error %q does not name the position", err)
		}
	}
	if _, _, ok := tok.Token(tok.VocabSize()); ok {
		t.Errorf("Token(VocabSize()) ok")
	}
	piece, raw, ok := tok.Token(0xff)
	if !ok || !utf8.ValidString(piece) || len(raw) != 1 || raw[0] != 0xff {
		t.Errorf("Token(0xff) = %q %v %v", piece, raw, ok)
	}
}

func FuzzTokenizerRoundTrip(f *testing.F) {
	tok := NewTokenizer()
	for _, s := range []string{"", "hello world", IMStart + "x" + IMEnd, "a\xffb", "  \n\t", "12345678", "<think>\n</think>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		got, err := tok.Decode(ids)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if got != s {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
		for _, id := range ids {
			if id < 0 || id >= tok.VocabSize() {
				t.Fatalf("id %d out of vocabulary", id)
			}
		}
	})
}

func BenchmarkTokenizerEncode(b *testing.B) {
	tok := NewTokenizer()
	text := strings.Repeat("The founder of Velmora Labs is Ida Kestrel. {\"query\": [\"Velmora Labs founder\"]}\n", 40)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		tok.Encode(text)
	}
}

// TestLogprobTokenMatchesToken checks the precomputed logprob view of every
// id (and of ids out of vocabulary) against Token.
func TestLogprobTokenMatchesToken(t *testing.T) {
	tok := NewTokenizer()
	for id := -1; id <= tok.VocabSize(); id++ {
		piece, raw, ok := tok.Token(id)
		gotPiece, gotRaw, gotOK := tok.logprobToken(id)
		if gotPiece != piece || gotOK != ok || len(gotRaw) != len(raw) {
			t.Fatalf("logprobToken(%d) = %q, %v, %v; Token gives %q, %v, %v", id, gotPiece, gotRaw, gotOK, piece, raw, ok)
		}
		for i := range raw {
			if gotRaw[i] != int(raw[i]) {
				t.Fatalf("logprobToken(%d) bytes %v, Token %v", id, gotRaw, raw)
			}
		}
	}
}

// encodePieceByMap is greedy longest match by map look-ups, every length
// from the longest down: what the trie must find.
func encodePieceByMap(t *Tokenizer, p string) []int {
	var ids []int
	for p != "" {
		n := min(len(p), maxPieceBytes)
		for ; n > 1; n-- {
			if id, ok := t.ids[p[:n]]; ok && id >= 256 && !t.isMarkerID(id) {
				ids = append(ids, id)
				break
			}
		}
		if n <= 1 {
			ids = append(ids, int(p[0]))
			n = 1
		}
		p = p[n:]
	}
	return ids
}

// TestEncodePieceTrieMatchesMap checks the trie on every piece, on pieces
// run together and cut short, and on markers.
func TestEncodePieceTrieMatchesMap(t *testing.T) {
	tok := NewTokenizer()
	check := func(p string) {
		t.Helper()
		var got []int
		tok.encodePiece(p, &got)
		if want := encodePieceByMap(tok, p); !slices.Equal(got, want) {
			t.Fatalf("encodePiece(%q) = %v, want %v", p, got, want)
		}
	}
	for i, p := range tok.pieces {
		check(p)
		check(p[:len(p)-1])
		check(p + tok.pieces[(i*7)%len(tok.pieces)])
		check(" " + p + "x")
	}
}

// FuzzEncodePieceTrie compares the trie with map look-ups on any text.
func FuzzEncodePieceTrie(f *testing.F) {
	f.Add(" Yorelhalhaven http://127.0.0.1:45953/site/a.html")
	f.Add("<think> the company's founders")
	tok := NewTokenizer()
	f.Fuzz(func(t *testing.T, p string) {
		var got []int
		tok.encodePiece(p, &got)
		if want := encodePieceByMap(tok, p); !slices.Equal(got, want) {
			t.Fatalf("encodePiece(%q) = %v, want %v", p, got, want)
		}
	})
}
