package llm

import (
	"strings"
	"testing"
)

// TestOffPolicy: unset settings count as the server's; neutral ones are
// on-policy; SGLang minds only the filters, vLLM everything unless it
// reports processed logprobs.
func TestOffPolicy(t *testing.T) {
	one, zero, off := 1.0, 0.0, -1
	neutral := Sampling{Temperature: &one, TopP: &one, TopK: &off, MinP: &zero, RepetitionPenalty: &one, PresencePenalty: &zero, FrequencyPenalty: &zero}
	if got := neutral.OffPolicy(); len(got) != 0 {
		t.Errorf("neutral sampling: %v", got)
	}
	if got := (Sampling{}).OffPolicy(); len(got) != 7 || got[0] != "temperature unset (the server's default)" {
		t.Errorf("unset sampling: %v", got)
	}
	hot := 0.6
	warm := neutral
	warm.Temperature = &hot
	if msg := LogprobsMismatch(DialectVLLM, false, warm, "planner"); !strings.Contains(msg, "temperature 0.6") || !strings.Contains(msg, "planner.logprobs_mode") {
		t.Errorf("vllm raw: %q", msg)
	}
	for _, tc := range []struct {
		dialect   string
		processed bool
	}{{DialectVLLM, true}, {DialectSGLang, false}} {
		if msg := LogprobsMismatch(tc.dialect, tc.processed, warm, "planner"); msg != "" {
			t.Errorf("%s processed=%v: temperature alone refused: %q", tc.dialect, tc.processed, msg)
		}
	}
}
