package tinker

import (
	"fmt"
	"math"
	"strconv"

	"github.com/mgrpo/mgrpo/rollout"
)

// Skip reasons of samples that yield no datum.
const (
	// skipShort: fewer than two tokens, so no target after the shift
	// (the executors' one-token padding samples are such).
	skipShort = iota
	// skipUnmasked: no target token has loss mask 1, so the datum would
	// add nothing to the loss or the gradient.
	skipUnmasked
)

// datum is one Tinker Datum as the SDK's types define it (types/datum.py,
// model_input.py, encoded_text_chunk.py, tensor_data.py). The hot path
// never builds it: appendDatum writes the same JSON directly from a
// Sample. It is the reference the fast encoder is tested against and
// what the shift tests read.
type datum struct {
	ModelInput   modelInput   `json:"model_input"`
	LossFnInputs lossFnInputs `json:"loss_fn_inputs"`
}

type modelInput struct {
	Chunks []encodedText `json:"chunks"`
}

type encodedText struct {
	Type   string  `json:"type"`
	Tokens []int64 `json:"tokens"`
}

// lossFnInputs are the importance_sampling and ppo losses' inputs, every
// one aligned to the targets.
type lossFnInputs struct {
	TargetTokens intTensor   `json:"target_tokens"`
	Weights      floatTensor `json:"weights"`
	Logprobs     floatTensor `json:"logprobs"`
	Advantages   floatTensor `json:"advantages"`
}

type intTensor struct {
	Data  []int64 `json:"data"`
	Dtype string  `json:"dtype"`
	Shape []int   `json:"shape"`
}

type floatTensor struct {
	Data  []float32 `json:"data"`
	Dtype string    `json:"dtype"`
	Shape []int     `json:"shape"`
}

// checkSample reports whether s yields a datum and, if not, why (skipShort
// or skipUnmasked). A sample whose slices differ in length, or whose
// logprobs or advantage are not finite (JSON cannot carry them), is an
// error.
func checkSample(s *rollout.Sample) (ok bool, reason int, err error) {
	n := len(s.InputIDs)
	if len(s.LossMask) != n || len(s.Logprobs) != n {
		return false, 0, fmt.Errorf("%d input ids, %d mask values, %d logprobs", n, len(s.LossMask), len(s.Logprobs))
	}
	if !finite32(s.Advantage) {
		return false, 0, fmt.Errorf("advantage %v is not a finite float32", s.Advantage)
	}
	if n < 2 {
		return false, skipShort, nil
	}
	masked := false
	for i := 1; i < n; i++ {
		if s.LossMask[i] != 0 {
			masked = true
			if !finite32(s.Logprobs[i]) {
				return false, 0, fmt.Errorf("logprob %v at token %d is not a finite float32", s.Logprobs[i], i)
			}
		}
	}
	if !masked {
		return false, skipUnmasked, nil
	}
	return true, 0, nil
}

// finite32 reports whether v is finite once rounded to float32.
func finite32(v float64) bool {
	f := float64(float32(v))
	return !math.IsInf(f, 0) && !math.IsNaN(f)
}

// shift returns s's datum: the model reads every token but the last and
// predicts every token but the first, so target j is token j+1, and the
// weight, the sampler's logprob and the advantage of target j are token
// j+1's (the advantage times the loss mask, so prompt and tool-output
// tokens carry none). Where the mask is 0 the logprob is sent as 0 too
// (the sampler did not produce the token). s must have passed checkSample.
func shift(s *rollout.Sample) datum {
	n := len(s.InputIDs) - 1
	d := datum{
		ModelInput: modelInput{Chunks: []encodedText{{Type: "encoded_text", Tokens: make([]int64, n)}}},
		LossFnInputs: lossFnInputs{
			TargetTokens: intTensor{Data: make([]int64, n), Dtype: "int64", Shape: []int{n}},
			Weights:      floatTensor{Data: make([]float32, n), Dtype: "float32", Shape: []int{n}},
			Logprobs:     floatTensor{Data: make([]float32, n), Dtype: "float32", Shape: []int{n}},
			Advantages:   floatTensor{Data: make([]float32, n), Dtype: "float32", Shape: []int{n}},
		},
	}
	in := &d.LossFnInputs
	for j := 0; j < n; j++ {
		d.ModelInput.Chunks[0].Tokens[j] = int64(s.InputIDs[j])
		in.TargetTokens.Data[j] = int64(s.InputIDs[j+1])
		if s.LossMask[j+1] != 0 {
			in.Weights.Data[j] = 1
			in.Logprobs.Data[j] = float32(s.Logprobs[j+1])
			in.Advantages.Data[j] = float32(s.Advantage)
		}
	}
	return d
}

// appendDatum appends the JSON of shift(s) to dst, byte for byte what
// encoding/json writes for it (FuzzAppendDatum checks), without building
// it: a batch of 4,096 samples of 8k tokens is about a gigabyte of JSON.
// s must have passed checkSample.
func appendDatum(dst []byte, s *rollout.Sample) []byte {
	ids, mask, lps := s.InputIDs, s.LossMask, s.Logprobs
	n := len(ids) - 1
	var shape []byte
	shape = append(shape, `,"shape":[`...)
	shape = strconv.AppendInt(shape, int64(n), 10)
	shape = append(shape, "]}"...)

	dst = append(dst, `{"model_input":{"chunks":[{"type":"encoded_text","tokens":[`...)
	dst = appendInts(dst, ids[:n])
	dst = append(dst, `]}]},"loss_fn_inputs":{"target_tokens":{"data":[`...)
	dst = appendInts(dst, ids[1:])
	dst = append(dst, `],"dtype":"int64"`...)
	dst = append(dst, shape...)

	dst = append(dst, `,"weights":{"data":[`...)
	for j := 1; j <= n; j++ {
		if j > 1 {
			dst = append(dst, ',')
		}
		if mask[j] != 0 {
			dst = append(dst, '1')
		} else {
			dst = append(dst, '0')
		}
	}
	dst = append(dst, `],"dtype":"float32"`...)
	dst = append(dst, shape...)

	dst = append(dst, `,"logprobs":{"data":[`...)
	for j := 1; j <= n; j++ {
		if j > 1 {
			dst = append(dst, ',')
		}
		if mask[j] != 0 {
			dst = appendFloat32(dst, float32(lps[j]))
		} else {
			dst = append(dst, '0')
		}
	}
	dst = append(dst, `],"dtype":"float32"`...)
	dst = append(dst, shape...)

	// The advantage is one number per sample: format it once.
	var advBuf [32]byte
	adv := appendFloat32(advBuf[:0], float32(s.Advantage))
	dst = append(dst, `,"advantages":{"data":[`...)
	for j := 1; j <= n; j++ {
		if j > 1 {
			dst = append(dst, ',')
		}
		if mask[j] != 0 {
			dst = append(dst, adv...)
		} else {
			dst = append(dst, '0')
		}
	}
	dst = append(dst, `],"dtype":"float32"`...)
	dst = append(dst, shape...)
	return append(dst, '}', '}')
}

func appendInts(dst []byte, xs []int) []byte {
	for i, x := range xs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(x), 10)
	}
	return dst
}

// appendFloat32 writes f as encoding/json writes a float32: the shortest
// decimal that reads back as f, in exponent form below 1e-6 and from 1e21
// up, with a one-digit negative exponent written without its leading zero.
func appendFloat32(dst []byte, f float32) []byte {
	if f == 0 {
		// Both zeros: encoding/json writes -0 as "-0".
		return strconv.AppendFloat(dst, float64(f), 'f', -1, 32)
	}
	abs := f
	if abs < 0 {
		abs = -abs
	}
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, float64(f), format, -1, 32)
	if format == 'e' {
		// strconv writes e-07; encoding/json shortens it to e-7.
		b := dst[start:]
		if k := len(b); k >= 4 && b[k-4] == 'e' && b[k-3] == '-' && b[k-2] == '0' {
			b[k-2] = b[k-1]
			dst = dst[:len(dst)-1]
		}
	}
	return dst
}
