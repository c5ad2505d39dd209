package score

import (
	"math"
	"strings"
	"testing"
)

func TestQuestionScorer(t *testing.T) {
	tests := []struct {
		name        string
		pred, truth string
		want        bool
	}{
		{"integer", "42", "42", true},
		{"integer wrong", "41", "42", false},
		{"dollar and thousands separator", "$1,000", "1000", true},
		{"thousands separator", "1,000", "1000", true},
		{"percent", "17%", "17", true},
		{"percent with space", "17 %", "17", true},
		{"unit word fails number parsing", "17 km", "17", false},
		{"spelled-out number fails number parsing", "seventeen", "17", false},
		{"float equals integer", "3.0", "3", true},
		{"trailing zero", "0.1", "0.10", true},
		{"padded decimal", "  3.50 ", "3.5", true},
		{"exponent", "1e3", "1000", true},
		{"python underscores", "1_000", "1000", true},
		{"explicit sign", "+3", "3", true},
		{"trailing dot", "3.", "3", true},
		{"leading dot", ".5", "0.5", true},
		{"hex is not a python float", "0x10", "16", false},
		{"arabic-indic digit", " ٣ ", "3", true},
		{"fullwidth digits", "１２", "12", true},
		{"nan never equals", "nan", "nan", false},
		{"unparsable is +inf (official quirk)", "no idea", "inf", true},
		{"overflow is +inf", "1e400", "inf", true},
		{"ground truth with comma is a list", "1000", "1,000", false},
		{"list of numbers", "1,000", "1,000", true},
		{"mixed list", "apple, 3, banana", "apple,3,banana", true},
		{"mixed list semicolons and units", "apple; $3; Banana", "apple, 3, banana", true},
		{"mixed list wrong number", "apple, 4, banana", "apple, 3, banana", false},
		{"list element fails number parsing", "a, three", "a, 3", false},
		{"list too short", "apple, banana", "apple, 3, banana", false},
		{"list too long", "apple, 3, banana, cherry", "apple,3,banana", false},
		{"list keeps punctuation", "St. Louis, 3", "St Louis, 3", false},
		{"list ignores whitespace and case", "ST LOUIS , 3", "St Louis, 3", true},
		{"list with empty pieces", "a,,b", "a,,b", true},
		{"string drops punctuation", "St. Louis", "St Louis", true},
		{"string drops whitespace", "Sea Gull", "seagull", true},
		{"string drops punctuation and case", "sea-gull!", "Seagull", true},
		{"string unicode whitespace", "sea\u00a0gull", "seagull", true},
		{"string extra words", "The answer is seagull", "seagull", false},
		{"empty prediction", "", "x", false},
		{"final sigma", "ΟΔΟΣ", "οδος", true},
		{"non-ascii punctuation kept", "“seagull”", "seagull", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := QuestionScorer(tc.pred, tc.truth); got != tc.want {
				t.Errorf("QuestionScorer(%q, %q) = %v, want %v", tc.pred, tc.truth, got, tc.want)
			}
		})
	}
}

func TestPyFloat(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1_000", 1000, true},
		{"1__000", 0, false},
		{"_1", 0, false},
		{"1_", 0, false},
		{"1e1_0", 1e10, true},
		{"1_000.000_1", 1000.0001, true},
		{" inf ", math.Inf(1), true},
		{"-Infinity", math.Inf(-1), true},
		{"infinit", 0, false},
		{".", 0, false},
		{"1e", 0, false},
		{"e5", 0, false},
		{"1 2", 0, false},
		{"", 0, false},
		{"0x1p3", 0, false},
		{"1e-400", 0, true},
		{"\u3000 7 \n", 7, true},
		{"7\x00", 0, false},
	}
	for _, tc := range tests {
		got, ok := pyFloat(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("pyFloat(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestNormalizeStr(t *testing.T) {
	tests := []struct {
		in          string
		removePunct bool
		want        string
	}{
		{" Hello, World! ", true, "helloworld"},
		{" Hello, World! ", false, "hello,world!"},
		{"İ", true, "i\u0307"},
		{"ΣΑΣ ΣΑ", true, "σασσα"}, // whitespace goes before lowercasing
		{"ΟΔΟΣ.", true, "οδος"},
		{"a\x1cb", true, "ab"},
	}
	for _, tc := range tests {
		if got := NormalizeStr(tc.in, tc.removePunct); got != tc.want {
			t.Errorf("NormalizeStr(%q, %v) = %q, want %q", tc.in, tc.removePunct, got, tc.want)
		}
	}
}

func TestSplitString(t *testing.T) {
	got := strings.Join(SplitString("a,b;;c,"), "|")
	if want := "a|b||c|"; got != want {
		t.Errorf("SplitString = %q, want %q", got, want)
	}
}

func FuzzGAIANormalizers(f *testing.F) {
	for _, s := range []string{"$1,000", "17 %", "apple; 3", "Sea Gull", "1_000", "ΟΔΟΣ", "nan", " ٣ ", "a,,b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = NormalizeNumberStr(s)
		n := NormalizeStr(s, true)
		for _, r := range n {
			if isPySpace(r) || (r < 0x80 && strings.ContainsRune(pyPunctuation, r)) || (r >= 'A' && r <= 'Z') {
				t.Fatalf("NormalizeStr(%q) = %q keeps %q", s, n, r)
			}
		}
		if got := strings.Count(s, ",") + strings.Count(s, ";") + 1; len(SplitString(s)) != got {
			t.Fatalf("SplitString(%q) gives %d pieces, want %d", s, len(SplitString(s)), got)
		}
		// Every answer matches itself, except NaN which equals nothing.
		if !strings.Contains(strings.ToLower(s), "nan") && !QuestionScorer(s, s) {
			t.Fatalf("QuestionScorer(%q, itself) = false", s)
		}
	})
}
