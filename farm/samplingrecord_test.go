package farm

import (
	"testing"

	"github.com/mgrpo/mgrpo/llm"
)

func TestSamplingRecordOfATurn(t *testing.T) {
	if got := samplingRecord(nil); got != nil {
		t.Errorf("a turn sampled as its role: %+v, want no record", *got)
	}
	temp, k := 0.6, 20
	got := samplingRecord(&llm.Sampling{Temperature: &temp, TopK: &k, MaxTokens: 64, Stop: []string{"x"}})
	if got == nil || *got.Temperature != 0.6 || *got.TopK != 20 || got.MaxTokens != 64 || len(got.Stop) != 1 || got.TopP != nil {
		t.Errorf("record %+v, want temperature 0.6, top_k 20, max_tokens 64, stop [x], top_p unset", got)
	}
}
