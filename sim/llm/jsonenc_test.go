package llm

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// randGen draws the values the hand-written encoder must render exactly as
// encoding/json does: awkward strings and floats, nil against empty slices,
// nil and set pointers.
type randGen struct{ r *rand.Rand }

func (g randGen) str() string {
	pieces := []string{"", "a", "Hello world", "<think>", "</tool_call>", "&", "\"", "\\", "\n", "\t", "\r", "\b", "\f",
		"\x00", "\x01", "\x1f", "\x7f", "\u2028", "\u2029", "é", "日本", "\xff", "\xc3", "\xe2\x80", "\uFFFD", "😀", " ", "{\"a\":1}"}
	n := g.r.IntN(6)
	var b []byte
	for i := 0; i < n; i++ {
		if g.r.IntN(4) == 0 {
			b = append(b, byte(g.r.IntN(256)))
			continue
		}
		b = append(b, pieces[g.r.IntN(len(pieces))]...)
	}
	return string(b)
}

func (g randGen) float() float64 {
	switch g.r.IntN(8) {
	case 0:
		return 0
	case 1:
		return math.Copysign(0, -1)
	case 2:
		return -g.r.Float64() * math.Pow(10, float64(g.r.IntN(50)-25))
	case 3:
		return []float64{1e-6, 1e-7, 9.99999e-7, 1e21, 1e20, 123456789012345678901, 5e-324, math.MaxFloat64, -1e-6, -1e21}[g.r.IntN(10)]
	case 4:
		return math.Round(-g.r.Float64()*1e6) / 1e6
	default:
		return g.r.NormFloat64() * math.Pow(10, float64(g.r.IntN(12)-6))
	}
}

func (g randGen) ints() []int {
	switch g.r.IntN(4) {
	case 0:
		return nil
	case 1:
		return []int{}
	}
	out := make([]int, g.r.IntN(20))
	for i := range out {
		out[i] = g.r.IntN(1<<20) - 1<<10
		if g.r.IntN(10) == 0 {
			out[i] = []int{math.MaxInt64, math.MinInt64, 0, -1}[g.r.IntN(4)]
		}
	}
	return out
}

func (g randGen) strPtr() *string {
	if g.r.IntN(3) == 0 {
		return nil
	}
	s := g.str()
	return &s
}

func (g randGen) anyVal() any {
	switch g.r.IntN(7) {
	case 0:
		return nil
	case 1:
		return g.str()
	case 2:
		return g.r.IntN(100000)
	case 3:
		return g.float()
	case 4:
		return g.r.IntN(2) == 0
	case 5:
		return map[string]any{"k": g.str(), "n": g.r.IntN(9)}
	default:
		return sglangFinishReason{Type: g.str(), Matched: g.anyVal(), Length: g.r.IntN(3), Message: g.str()}
	}
}

func (g randGen) anyPtr() *any {
	if g.r.IntN(2) == 0 {
		return nil
	}
	v := g.anyVal()
	return &v
}

func (g randGen) n(max int) int { return g.r.IntN(max) }

func (g randGen) vllm() vllmChatResponse {
	r := vllmChatResponse{ID: g.str(), Object: g.str(), Created: g.r.Int64() - 1<<62, Model: g.str(),
		ServiceTier: g.strPtr(), SystemFingerprint: g.strPtr(), PromptLogprobs: g.anyPtr(), PromptTokenIDs: g.ints(), KVTransferParams: g.anyPtr(),
		Usage: vllmUsage{PromptTokens: g.n(5000), TotalTokens: g.n(5000), CompletionTokens: g.n(5000), PromptTokensDetails: g.anyPtr()}}
	if g.n(5) > 0 {
		r.Choices = make([]vllmChatChoice, g.n(3))
	}
	for i := range r.Choices {
		c := vllmChatChoice{Index: g.n(4), FinishReason: g.str(), StopReason: g.anyVal(), TokenIDs: g.ints(),
			Message: vllmMessage{Role: g.str(), Content: g.strPtr(), Refusal: g.strPtr(), Annotations: g.anyPtr(), Audio: g.anyPtr(),
				FunctionCall: g.anyPtr(), Reasoning: g.strPtr(), ReasoningContent: g.strPtr()}}
		if g.n(4) > 0 {
			c.Message.ToolCalls = []vllmToolCall{}
			for k := g.n(3); k > 0; k-- {
				c.Message.ToolCalls = append(c.Message.ToolCalls, vllmToolCall{ID: g.str(), Type: g.str(), Function: vllmFunctionCall{Name: g.str(), Arguments: g.str()}})
			}
		}
		if g.n(3) > 0 {
			c.Logprobs = &vllmLogprobs{}
			if g.n(5) > 0 {
				c.Logprobs.Content = []vllmLogprobEntry{}
			}
			for k := g.n(5); k > 0 && c.Logprobs.Content != nil; k-- {
				e := vllmLogprobEntry{Token: g.str(), Logprob: g.float(), Bytes: g.ints()}
				if g.n(4) > 0 {
					e.TopLogprobs = []vllmTopLogprob{}
				}
				for j := g.n(3); j > 0 && e.TopLogprobs != nil; j-- {
					e.TopLogprobs = append(e.TopLogprobs, vllmTopLogprob{Token: g.str(), Logprob: g.float(), Bytes: g.ints()})
				}
				c.Logprobs.Content = append(c.Logprobs.Content, e)
			}
		}
		r.Choices[i] = c
	}
	return r
}

func (g randGen) triples() [][3]any {
	if g.n(4) == 0 {
		return nil
	}
	out := make([][3]any, g.n(4))
	for i := range out {
		out[i] = [3]any{g.anyVal(), g.anyVal(), g.anyVal()}
	}
	return out
}

func (g randGen) sglang() sglangChatResponse {
	r := sglangChatResponse{ID: g.str(), Object: g.str(), Created: g.r.Int64(), Model: g.str(),
		Usage: sglangUsage{PromptTokens: g.n(5000), TotalTokens: g.n(5000), CompletionTokens: g.n(5000), PromptTokensDetails: g.anyPtr(), ReasoningTokens: g.n(9)}}
	if g.n(4) > 0 {
		r.Metadata = map[string]string{}
		for k := g.n(4); k > 0; k-- {
			r.Metadata[g.str()] = g.str()
		}
	}
	if g.n(5) > 0 {
		r.Choices = make([]sglangChatChoice, g.n(3))
	}
	for i := range r.Choices {
		c := sglangChatChoice{Index: g.n(4), FinishReason: g.str(), MatchedStop: g.anyVal(), PromptTokenIDs: g.ints(), TokenIDs: g.ints(),
			Message: sglangMessage{Role: g.str(), Content: g.strPtr(), ReasoningContent: g.strPtr()}}
		for k := g.n(3); k > 0; k-- {
			c.Message.ToolCalls = append(c.Message.ToolCalls, sglangToolCall{ID: g.str(), Index: g.n(3), Type: g.str(), Function: vllmFunctionCall{Name: g.str(), Arguments: g.str()}})
		}
		if g.n(3) > 0 {
			c.Logprobs = &sglangLogprobs{}
			if g.n(5) > 0 {
				c.Logprobs.Content = []sglangLogprobEntry{}
			}
			for k := g.n(5); k > 0 && c.Logprobs.Content != nil; k-- {
				e := sglangLogprobEntry{Token: g.str(), Logprob: g.float(), Bytes: g.ints()}
				if g.n(4) > 0 {
					e.TopLogprobs = []sglangTopLogprob{}
				}
				for j := g.n(3); j > 0 && e.TopLogprobs != nil; j-- {
					e.TopLogprobs = append(e.TopLogprobs, sglangTopLogprob{Token: g.str(), Logprob: g.float(), Bytes: g.ints()})
				}
				c.Logprobs.Content = append(c.Logprobs.Content, e)
			}
		}
		if g.n(2) == 0 {
			m := &sglangMeta{ID: g.str(), FinishReason: g.anyVal(), PromptTokens: g.n(99), WeightVersion: g.str(), TotalRetractions: g.n(2),
				CompletionTokens: g.n(99), CachedTokens: g.n(99), E2ELatency: g.float()}
			if g.n(2) == 0 {
				in, out := g.triples(), g.triples()
				m.InputTokenLogprobs, m.OutputTokenLogprobs = &in, &out
			}
			if g.n(2) == 0 {
				inTop := []any{nil, g.anyVal()}[:g.n(3)]
				if g.n(4) == 0 {
					inTop = nil
				}
				tops := [][][3]any{g.triples(), g.triples()}
				if g.n(4) == 0 {
					tops = nil
				}
				m.InputTopLogprobs, m.OutputTopLogprobs = &inTop, &tops
			}
			c.MetaInfo = m
		}
		r.Choices[i] = c
	}
	return r
}

// checkSameJSON fails when the hand-written encoder and encoding/json
// disagree on v.
func checkSameJSON(t *testing.T, v jsonAppender) {
	t.Helper()
	want, wantErr := marshalReflect(v)
	got, gotErr := marshalJSON(v)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("error: got %v, want %v", gotErr, wantErr)
	}
	if wantErr == nil && !bytes.Equal(got, want) {
		t.Fatalf("hand-written encoding differs\ngot:  %s\nwant: %s", got, want)
	}
}

// TestJSONEncoderMatchesEncodingJSON compares the hand-written chat response
// encoders with encoding/json on random values.
func TestJSONEncoderMatchesEncodingJSON(t *testing.T) {
	g := randGen{rand.New(rand.NewPCG(1, 2))}
	for i := 0; i < 3000; i++ {
		checkSameJSON(t, g.vllm())
		checkSameJSON(t, g.sglang())
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		checkSameJSON(t, vllmChatResponse{Choices: []vllmChatChoice{{Logprobs: &vllmLogprobs{Content: []vllmLogprobEntry{{Logprob: f}}}}}})
	}
}

// FuzzJSONString compares string and float encoding with encoding/json.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "<think>\n", "\x00\x1f\x7f\"\\", "\u2028\u2029", "\xff\xfe", "é日😀", "\xe2\x80\xa8"} {
		f.Add(s, 0.0)
	}
	f.Add("x", 1e-7)
	f.Add("y", -1e21)
	f.Add("z", 123.456)
	f.Fuzz(func(t *testing.T, s string, x float64) {
		checkSameJSON(t, vllmChatResponse{ID: s, Model: s, Choices: []vllmChatChoice{{StopReason: s,
			Logprobs: &vllmLogprobs{Content: []vllmLogprobEntry{{Token: s, Logprob: x}}}}}})
		checkSameJSON(t, sglangChatResponse{Metadata: map[string]string{s: s, "a" + s: s}, Choices: []sglangChatChoice{{MetaInfo: &sglangMeta{E2ELatency: x}}}})
	})
}
