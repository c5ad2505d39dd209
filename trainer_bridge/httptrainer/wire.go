package httptrainer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// APIVersion is the version of docs/trainer-api.md this client speaks.
const APIVersion = 1

// startRequest is the body of POST /v1/start.
type startRequest struct {
	APIVersion int                      `json:"api_version"`
	Run        string                   `json:"run"`
	Role       rollout.Role             `json:"role"`
	BaseModel  string                   `json:"base_model"`
	LoRARank   int                      `json:"lora_rank"`
	Seed       int64                    `json:"seed"`
	Loss       trainerbridge.Loss       `json:"loss"`
	ClipLow    float64                  `json:"clip_low"`
	ClipHigh   float64                  `json:"clip_high"`
	Adam       trainerbridge.AdamParams `json:"adam"`
	// Temperature is the role's sampling temperature, left out when 1:
	// the trainer divides its logits by it when it computes logprobs.
	Temperature float64 `json:"temperature,omitempty"`
}

// startResponse is the answer to POST /v1/start.
type startResponse struct {
	APIVersion   int    `json:"api_version"`
	Version      int64  `json:"version"`
	Weights      string `json:"weights"`
	AcceptsGzip  bool   `json:"accepts_gzip"`
	MaxBodyBytes int64  `json:"max_body_bytes"`
}

// stepHeader is the part of a POST /v1/steps body before its sequences
// and samples.
type stepHeader struct {
	Key           string                   `json:"key"`
	Run           string                   `json:"run"`
	Role          rollout.Role             `json:"role"`
	Step          int                      `json:"step"`
	PolicyVersion int64                    `json:"policy_version"`
	Loss          trainerbridge.Loss       `json:"loss"`
	ClipLow       float64                  `json:"clip_low"`
	ClipHigh      float64                  `json:"clip_high"`
	Adam          trainerbridge.AdamParams `json:"adam"`
	Temperature   float64                  `json:"temperature,omitempty"`
}

// jobState is the answer to POST /v1/steps and GET /v1/steps.
type jobState struct {
	Key    string     `json:"key"`
	Status string     `json:"status"`
	Result *jobResult `json:"result"`
	Error  *apiError  `json:"error"`
}

// The job statuses.
const (
	statusQueued  = "queued"
	statusRunning = "running"
	statusDone    = "done"
	statusFailed  = "failed"
)

type jobResult struct {
	Weights string             `json:"weights"`
	Version int64              `json:"version"`
	Metrics map[string]float64 `json:"metrics"`
}

// apiError is the error member of every error answer.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// errorBody is the body of an error answer.
type errorBody struct {
	Error *apiError `json:"error"`
}

// encodeStep writes the POST /v1/steps body of b, each distinct sequence
// once, to w. The token arrays, nearly all of the bytes, are appended by
// hand: encoding/json's reflection over 30 million numbers was the cost of
// a step. The bytes depend only on b and h.
func encodeStep(w io.Writer, h stepHeader, b trainerbridge.Batch) error {
	head, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode step: %w", err)
	}
	seq, first := trainerbridge.DistinctSequences(b.Samples)
	buf := make([]byte, 0, 1<<16)
	buf = append(buf, head[:len(head)-1]...)
	buf = append(buf, `,"sequences":[`...)
	for n, i := range first {
		if n > 0 {
			buf = append(buf, ',')
		}
		s := &b.Samples[i]
		if buf, err = appendSequence(buf, s); err != nil {
			return fmt.Errorf("encode step: sample %d: %w", i, err)
		}
		if len(buf) >= 1<<16 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, `],"samples":[`...)
	for i := range b.Samples {
		if i > 0 {
			buf = append(buf, ',')
		}
		if buf, err = rollout.AppendSampleEntryJSON(buf, seq[i], &b.Samples[i]); err != nil {
			return fmt.Errorf("encode step: sample %d: %w", i, err)
		}
	}
	buf = append(buf, "]}"...)
	_, err = w.Write(buf)
	return err
}

// appendSequence appends {"input_ids":[…],"loss_mask":[…],"logprobs":[…]}.
func appendSequence(dst []byte, s *rollout.Sample) ([]byte, error) {
	n := len(s.InputIDs)
	if len(s.LossMask) != n || len(s.Logprobs) != n {
		return dst, fmt.Errorf("lengths differ: %d input ids, %d mask values, %d logprobs", n, len(s.LossMask), len(s.Logprobs))
	}
	dst = slices.Grow(dst, 48+9*n+3*n)
	dst = append(dst, `{"input_ids":[`...)
	for i, id := range s.InputIDs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(id), 10)
	}
	dst = append(dst, `],"loss_mask":[`...)
	for i, m := range s.LossMask {
		if i > 0 {
			dst = append(dst, ',')
		}
		if m == 0 || m == 1 {
			dst = append(dst, '0'+byte(m))
		} else {
			dst = strconv.AppendInt(dst, int64(m), 10)
		}
	}
	dst = append(dst, `],"logprobs":[`...)
	for i, f := range s.Logprobs {
		if i > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = appendFloat(dst, f); !ok {
			return dst, fmt.Errorf("token %d: logprob %v is not a JSON number", i, f)
		}
	}
	return append(dst, "]}"...), nil
}

// appendFloat appends f as a JSON number that decodes to exactly f (the
// shortest such decimal); false for NaN and infinities.
func appendFloat(dst []byte, f float64) ([]byte, bool) {
	if math.Float64bits(f) == 0 {
		return append(dst, '0'), true
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64), true
}

// encodeBody returns b's step body, gzip-compressed when zip is set.
func encodeBody(h stepHeader, b trainerbridge.Batch, zip bool) ([]byte, error) {
	var out bytes.Buffer
	if !zip {
		if err := encodeStep(&out, h, b); err != nil {
			return nil, err
		}
		return out.Bytes(), nil
	}
	// BestSpeed: compression is most of the cost of a body (level 1 turns
	// the 361 MB of JSON of 4,096 samples of 8k tokens into 142 MB in about
	// 4 s on the 2-core development VM; BenchmarkEncodeStep).
	zw, err := gzip.NewWriterLevel(&out, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if err := encodeStep(zw, h, b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
