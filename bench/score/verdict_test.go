package score

import (
	"errors"
	"strings"
	"testing"
)

func TestParseCorrectIncorrect(t *testing.T) {
	tests := []struct {
		name      string
		raw       string
		want      bool
		malformed bool
	}{
		{"bare correct", "Correct", true, false},
		{"bare incorrect", "Incorrect", false, false},
		{"lowercase with period", "correct.", true, false},
		{"markdown", "**Incorrect**", false, false},
		{"quoted", "\"Correct\"", true, false},
		{"sentence", "The predicted answer is correct.", true, false},
		{"negated", "The answer is not correct.", false, false},
		{"thinking preamble", "<think>Is it correct or incorrect? Let me see.</think>\nIncorrect", false, false},
		{"chinese bare", "正确", true, false},
		{"chinese bare wrong", "【错误】", false, false},
		{"both words", "Correct or Incorrect", false, true},
		{"no verdict", "I cannot tell.", false, true},
		{"empty", "", false, true},
		{"substring only", "incorrectly formatted? correctness unclear", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCorrectIncorrect(tc.raw)
			if tc.malformed {
				if !errors.Is(err, ErrMalformedVerdict) || !errors.Is(err, ErrJudge) {
					t.Fatalf("ParseCorrectIncorrect(%q) error = %v, want ErrMalformedVerdict", tc.raw, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseCorrectIncorrect(%q) = %v, %v; want %v", tc.raw, got, err, tc.want)
			}
		})
	}
}

func TestParseXBenchVerdict(t *testing.T) {
	tests := []struct {
		name      string
		raw       string
		want      bool
		extracted string
		malformed bool
	}{
		{"reference format", "最终答案: 42\n\n解释: 一致。\n\n结论: 正确", true, "42", false},
		{"wrong", "最终答案: 41\n解释: 不一致。\n结论: 错误", false, "41", false},
		{"fullwidth colon", "最终答案：无\n解释：没有答案。\n结论：错误", false, "无", false},
		{"no space", "结论:正确", true, "", false},
		{"markdown", "**最终答案**: 北京\n**解释**: 一致\n**结论**: **正确**", true, "北京", false},
		{"brackets", "结论: 【正确】", true, "", false},
		{"last verdict wins", "结论: 如果一致则填写'正确'\n结论: 错误", false, "", false},
		{"thinking", "<think>结论: 正确?</think>最终答案: x\n结论: 错误", false, "x", false},
		{"english reply", "Correct", false, "", true},
		{"no conclusion", "最终答案: 42\n解释: 一致", false, "42", true},
		{"conclusion without verdict", "结论: 不确定", false, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, extracted, err := ParseXBenchVerdict(tc.raw)
			if tc.malformed {
				if !errors.Is(err, ErrMalformedVerdict) {
					t.Fatalf("ParseXBenchVerdict(%q) error = %v, want ErrMalformedVerdict", tc.raw, err)
				}
				return
			}
			if err != nil || got != tc.want || extracted != tc.extracted {
				t.Errorf("ParseXBenchVerdict(%q) = %v, %q, %v; want %v, %q", tc.raw, got, extracted, err, tc.want, tc.extracted)
			}
		})
	}
}

func FuzzParseVerdict(f *testing.F) {
	for _, s := range []string{"Correct", "**Incorrect**", "not correct", "结论: 正确", "最终答案：x\n结论：错误", "<think>", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if _, err := ParseCorrectIncorrect(raw); err == nil {
			low := strings.ToLower(raw)
			if !strings.Contains(low, "correct") && !strings.Contains(raw, "正确") && !strings.Contains(raw, "错误") {
				t.Fatalf("ParseCorrectIncorrect(%q) gave a verdict without a verdict word", raw)
			}
		} else if !errors.Is(err, ErrMalformedVerdict) {
			t.Fatalf("ParseCorrectIncorrect(%q) error %v does not wrap ErrMalformedVerdict", raw, err)
		}
		if _, _, err := ParseXBenchVerdict(raw); err == nil {
			if !strings.Contains(raw, "结论") {
				t.Fatalf("ParseXBenchVerdict(%q) gave a verdict without 结论", raw)
			}
		} else if !errors.Is(err, ErrMalformedVerdict) {
			t.Fatalf("ParseXBenchVerdict(%q) error %v does not wrap ErrMalformedVerdict", raw, err)
		}
	})
}
