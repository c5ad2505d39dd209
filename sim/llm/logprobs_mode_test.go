package llm

import (
	"math"
	"testing"
)

// maxScoreDiff scores every datum at temperature and returns the largest
// |scorer − server| over the masked positions, and how many turns differ
// by more than 1e-5.
func maxScoreDiff(t *testing.T, sc *Scorer, s *Server, data []datum, temperature float64) (float64, int) {
	t.Helper()
	maxDiff, off := 0.0, 0
	for i, d := range data {
		got, err := sc.ScoreAt(s.Params(), d.seq, d.mask, temperature)
		if err != nil {
			t.Fatalf("datum %d: %v", i, err)
		}
		if len(got.Unmatched) > 0 {
			t.Fatalf("datum %d: unmatched turns %+v", i, got.Unmatched)
		}
		for pos, m := range d.mask {
			if !m {
				continue
			}
			diff := math.Abs(got.Logprobs[pos] - d.lps[pos])
			maxDiff = max(maxDiff, diff)
			if diff > 1e-5 {
				off++
			}
		}
	}
	return maxDiff, off
}

// TestLogprobsModes samples at temperature 0.6 and checks which
// distribution each mode's logprobs describe: raw ones are the policy's at
// temperature 1 (a trainer dividing its logits by 0.6 sees the off-policy
// gap), processed ones and SGLang's are the tempered distribution's.
func TestLogprobsModes(t *testing.T) {
	processed := testConfig(DialectVLLM)
	processed.LogprobsMode = LogprobsProcessed
	raw := testConfig(DialectVLLM)
	raw.LogprobsMode = LogprobsRaw
	cases := []struct {
		name       string
		cfg        Config
		route      string
		agreeAt    float64 // the scoring temperature the server's logprobs match
		disagreeAt float64 // one they must not match
	}{
		{"vllm raw", raw, "chat", 1, 0.6},
		{"vllm default is raw", testConfig(DialectVLLM), "chat", 1, 0.6},
		{"vllm processed", processed, "chat", 0.6, 1},
		{"sglang generate tempered", testConfig(DialectSGLang), "generate", 0.6, 1},
		{"sglang chat tempered", testConfig(DialectSGLang), "chat", 0.6, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, data, _ := playDataSampled(t, tc.cfg, 4, tc.route, false, 0.6, 0)
			sc := NewScorer(tc.cfg)
			if d, off := maxScoreDiff(t, sc, s, data, tc.agreeAt); off > 0 {
				t.Errorf("scored at temperature %v: %d positions differ from the server's logprobs (max |Δ| %v), want none", tc.agreeAt, off, d)
			}
			if d, off := maxScoreDiff(t, sc, s, data, tc.disagreeAt); off == 0 {
				t.Errorf("scored at temperature %v: every position agrees (max |Δ| %v), want the gap a temperature of 0.6 makes", tc.disagreeAt, d)
			} else {
				t.Logf("scored at temperature %v: %d positions off, max |Δ| %.3g", tc.disagreeAt, off, d)
			}
		})
	}
}

// TestLogprobsModeNeutralSameBytes checks that with temperature 1 and no
// filter both modes answer the same bytes: the default keeps runs with
// on-policy sampling unchanged.
func TestLogprobsModeNeutralSameBytes(t *testing.T) {
	processed := testConfig(DialectVLLM)
	processed.LogprobsMode = LogprobsProcessed
	_, a, _ := playDataSampled(t, testConfig(DialectVLLM), 3, "chat", false, 1, 0)
	_, b, _ := playDataSampled(t, processed, 3, "chat", false, 1, 0)
	if len(a) != len(b) {
		t.Fatalf("raw %d data, processed %d", len(a), len(b))
	}
	for i := range a {
		if len(a[i].lps) != len(b[i].lps) {
			t.Fatalf("datum %d: %d and %d positions", i, len(a[i].lps), len(b[i].lps))
		}
		for j := range a[i].lps {
			if a[i].lps[j] != b[i].lps[j] || a[i].seq[j] != b[i].seq[j] {
				t.Fatalf("datum %d position %d: raw (%d, %v), processed (%d, %v)", i, j, a[i].seq[j], a[i].lps[j], b[i].seq[j], b[i].lps[j])
			}
		}
	}
}

// TestLogprobsModeProcessedTopP checks that processed logprobs of a
// filtered request are at least the tempered ones (a filter only removes
// mass, and the kept outcomes are renormalised).
func TestLogprobsModeProcessedTopP(t *testing.T) {
	processed := testConfig(DialectVLLM)
	processed.LogprobsMode = LogprobsProcessed
	s, data, _ := playDataSampled(t, processed, 3, "chat", false, 0.8, 0.5)
	sc := NewScorer(processed)
	higher := 0
	for i, d := range data {
		got, err := sc.ScoreAt(s.Params(), d.seq, d.mask, 0.8)
		if err != nil {
			t.Fatalf("datum %d: %v", i, err)
		}
		for pos, m := range d.mask {
			if !m {
				continue
			}
			if d.lps[pos] < got.Logprobs[pos]-1e-5 {
				t.Fatalf("datum %d position %d: processed %v below tempered %v", i, pos, d.lps[pos], got.Logprobs[pos])
			}
			if d.lps[pos] > got.Logprobs[pos]+1e-5 {
				higher++
			}
		}
	}
	if higher == 0 {
		t.Errorf("top_p 0.5 filtered no turn's outcomes")
	}
}

func TestLogprobsModeValidate(t *testing.T) {
	c := testConfig(DialectVLLM)
	c.LogprobsMode = "processed"
	if err := c.Validate(); err == nil {
		t.Errorf("LogprobsMode processed: no error, want one naming raw_logprobs and processed_logprobs")
	}
	c = testConfig(DialectSGLang)
	c.LogprobsMode = LogprobsProcessed
	if err := c.Validate(); err == nil {
		t.Errorf("sglang with LogprobsMode: no error")
	}
}
