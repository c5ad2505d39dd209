package tinker

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mgrpo/mgrpo/rollout"
)

func TestShift(t *testing.T) {
	tests := []struct {
		name string
		s    rollout.Sample
		want *datum // nil: skipped
		skip int
	}{
		{
			name: "prompt then completion",
			s: rollout.Sample{
				InputIDs:  []int{10, 11, 12, 13, 14},
				LossMask:  []int8{0, 0, 1, 1, 1},
				Logprobs:  []float64{0, 0, -0.5, -0.25, -1},
				Advantage: 2,
			},
			want: &datum{
				ModelInput: modelInput{Chunks: []encodedText{{Type: "encoded_text", Tokens: []int64{10, 11, 12, 13}}}},
				LossFnInputs: lossFnInputs{
					TargetTokens: intTensor{Data: []int64{11, 12, 13, 14}, Dtype: "int64", Shape: []int{4}},
					Weights:      floatTensor{Data: []float32{0, 1, 1, 1}, Dtype: "float32", Shape: []int{4}},
					Logprobs:     floatTensor{Data: []float32{0, -0.5, -0.25, -1}, Dtype: "float32", Shape: []int{4}},
					Advantages:   floatTensor{Data: []float32{0, 2, 2, 2}, Dtype: "float32", Shape: []int{4}},
				},
			},
		},
		{
			name: "mask zeros inside: tool output between two turns",
			s: rollout.Sample{
				InputIDs:  []int{1, 2, 3, 4, 5, 6},
				LossMask:  []int8{0, 1, 0, 0, 1, 1},
				Logprobs:  []float64{0, -0.1, 0, 0, -0.2, -0.3},
				Advantage: -0.5,
			},
			want: &datum{
				ModelInput: modelInput{Chunks: []encodedText{{Type: "encoded_text", Tokens: []int64{1, 2, 3, 4, 5}}}},
				LossFnInputs: lossFnInputs{
					TargetTokens: intTensor{Data: []int64{2, 3, 4, 5, 6}, Dtype: "int64", Shape: []int{5}},
					Weights:      floatTensor{Data: []float32{1, 0, 0, 1, 1}, Dtype: "float32", Shape: []int{5}},
					Logprobs:     floatTensor{Data: []float32{-0.1, 0, 0, -0.2, -0.3}, Dtype: "float32", Shape: []int{5}},
					Advantages:   floatTensor{Data: []float32{-0.5, 0, 0, -0.5, -0.5}, Dtype: "float32", Shape: []int{5}},
				},
			},
		},
		{
			name: "two tokens, the second generated",
			s:    rollout.Sample{InputIDs: []int{7, 8}, LossMask: []int8{0, 1}, Logprobs: []float64{0, -2}, Advantage: 1},
			want: &datum{
				ModelInput: modelInput{Chunks: []encodedText{{Type: "encoded_text", Tokens: []int64{7}}}},
				LossFnInputs: lossFnInputs{
					TargetTokens: intTensor{Data: []int64{8}, Dtype: "int64", Shape: []int{1}},
					Weights:      floatTensor{Data: []float32{1}, Dtype: "float32", Shape: []int{1}},
					Logprobs:     floatTensor{Data: []float32{-2}, Dtype: "float32", Shape: []int{1}},
					Advantages:   floatTensor{Data: []float32{1}, Dtype: "float32", Shape: []int{1}},
				},
			},
		},
		{
			name: "one token (padding): no target, skipped",
			s:    rollout.Sample{InputIDs: []int{0}, LossMask: []int8{0}, Logprobs: []float64{0}},
			skip: skipShort,
		},
		{
			name: "one generated token: still no target, skipped",
			s:    rollout.Sample{InputIDs: []int{9}, LossMask: []int8{1}, Logprobs: []float64{-1}, Advantage: 1},
			skip: skipShort,
		},
		{
			name: "only the first token masked: nothing predicted under the mask, skipped",
			s:    rollout.Sample{InputIDs: []int{1, 2, 3}, LossMask: []int8{1, 0, 0}, Logprobs: []float64{-1, 0, 0}, Advantage: 1},
			skip: skipUnmasked,
		},
		{
			name: "all mask zeros: skipped",
			s:    rollout.Sample{InputIDs: []int{1, 2, 3}, LossMask: []int8{0, 0, 0}, Logprobs: []float64{0, 0, 0}, Advantage: 1},
			skip: skipUnmasked,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason, err := checkSample(&tc.s)
			if err != nil {
				t.Fatalf("checkSample: %v", err)
			}
			if tc.want == nil {
				if ok || reason != tc.skip {
					t.Fatalf("checkSample = %v, reason %d; want skipped with reason %d", ok, reason, tc.skip)
				}
				return
			}
			if !ok {
				t.Fatalf("checkSample skipped it (reason %d)", reason)
			}
			got := shift(&tc.s)
			if diff := cmp.Diff(*tc.want, got); diff != "" {
				t.Errorf("shift (-want +got):\n%s", diff)
			}
			wantJSON, _ := json.Marshal(got)
			if gotJSON := appendDatum(nil, &tc.s); !bytes.Equal(gotJSON, wantJSON) {
				t.Errorf("appendDatum =\n%s\nwant (encoding/json)\n%s", gotJSON, wantJSON)
			}
		})
	}
}

func TestCheckSampleErrors(t *testing.T) {
	tests := []struct {
		name string
		s    rollout.Sample
		want string
	}{
		{"lengths differ", rollout.Sample{InputIDs: []int{1, 2}, LossMask: []int8{0}, Logprobs: []float64{0, 0}}, "2 input ids, 1 mask values"},
		{"NaN advantage", rollout.Sample{InputIDs: []int{1, 2}, LossMask: []int8{0, 1}, Logprobs: []float64{0, -1}, Advantage: math.NaN()}, "advantage NaN"},
		{"infinite logprob", rollout.Sample{InputIDs: []int{1, 2}, LossMask: []int8{0, 1}, Logprobs: []float64{0, math.Inf(-1)}}, "logprob -Inf at token 1"},
		{"logprob beyond float32", rollout.Sample{InputIDs: []int{1, 2}, LossMask: []int8{0, 1}, Logprobs: []float64{0, -1e300}}, "not a finite float32"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := checkSample(&tc.s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("checkSample error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// FuzzAppendDatum checks the hand-written encoder against encoding/json
// of the reference shift, byte for byte.
func FuzzAppendDatum(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, 0.5, int64(7))
	f.Add([]byte{0, 255, 128, 1}, -1e-7, int64(-3))
	f.Add([]byte{9, 9, 9, 9, 9, 9}, 3e21, int64(1<<40))
	f.Fuzz(func(t *testing.T, raw []byte, adv float64, seed int64) {
		n := len(raw)/3 + 2
		s := rollout.Sample{InputIDs: make([]int, n), LossMask: make([]int8, n), Logprobs: make([]float64, n), Advantage: adv}
		for i := 0; i < n; i++ {
			var a, b, c byte
			if 3*i+2 < len(raw) {
				a, b, c = raw[3*i], raw[3*i+1], raw[3*i+2]
			}
			s.InputIDs[i] = int(seed) + int(a)<<8 | int(b)
			if c&1 == 1 {
				s.LossMask[i] = 1
				// Spread logprobs over many magnitudes, tiny ones included.
				s.Logprobs[i] = -float64(c) * math.Pow(10, float64(int(b%40)-30))
			}
		}
		ok, _, err := checkSample(&s)
		if err != nil || !ok {
			return
		}
		want, err := json.Marshal(shift(&s))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendDatum(nil, &s); !bytes.Equal(got, want) {
			t.Fatalf("appendDatum =\n%s\nencoding/json:\n%s", got, want)
		}
	})
}

func FuzzAppendFloat32(f *testing.F) {
	for _, v := range []float32{0, 1, -1, 1e-6, 9.999999e-7, 1e21, 1e20, 1.5e-10, -3.4028235e38, float32(math.Copysign(0, -1))} {
		f.Add(math.Float32bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint32) {
		v := math.Float32frombits(bits)
		if math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
			return
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendFloat32(nil, v); !bytes.Equal(got, want) {
			t.Fatalf("appendFloat32(%v) = %s, encoding/json %s", v, got, want)
		}
	})
}
