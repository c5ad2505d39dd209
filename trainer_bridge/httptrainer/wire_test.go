package httptrainer

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/trainertest"
)

// FuzzAppendSequence checks the hand-written encoder against
// encoding/json: what it writes decodes, with encoding/json, to exactly the
// values encoded.
func FuzzAppendSequence(f *testing.F) {
	f.Add(int64(151_000), int8(1), -0.123456, 1e-7)
	f.Add(int64(-1), int8(-3), math.Copysign(0, -1), 1e21)
	f.Add(int64(math.MaxInt64), int8(0), math.SmallestNonzeroFloat64, -math.MaxFloat64)
	f.Fuzz(func(t *testing.T, id int64, mask int8, a, b float64) {
		s := rollout.Sample{InputIDs: []int{int(id), 0}, LossMask: []int8{mask, 1}, Logprobs: []float64{a, b}}
		out, err := appendSequence(nil, &s)
		finite := !math.IsNaN(a) && !math.IsInf(a, 0) && !math.IsNaN(b) && !math.IsInf(b, 0)
		if err != nil {
			if finite {
				t.Fatalf("appendSequence rejected finite values: %v", err)
			}
			return
		}
		var got struct {
			InputIDs []int     `json:"input_ids"`
			LossMask []int8    `json:"loss_mask"`
			Logprobs []float64 `json:"logprobs"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("encoding/json rejects %s: %v", out, err)
		}
		if got.InputIDs[0] != int(id) || got.LossMask[0] != mask || math.Float64bits(got.Logprobs[0]) != math.Float64bits(a) || math.Float64bits(got.Logprobs[1]) != math.Float64bits(b) {
			t.Fatalf("%s decodes to %+v, want %d %d %v %v", out, got, id, mask, a, b)
		}
	})
}

func TestStepBodyIsDeterministic(t *testing.T) {
	_, exec := trainertest.MustBatches(t, trainertest.BatchSpec{Run: "d", Step: 1, Seed: 1})
	h := stepHeader{Key: exec.IdempotencyKey(), Run: exec.Run, Role: exec.Role, Step: exec.Step}
	a, err := encodeBody(h, exec, true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := encodeBody(h, exec, true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("two encodings of the same batch differ: a retried step would be refused as another batch")
	}
}

// bigBatch is 4,096 distinct samples of 8,192 tokens, a fifth of them
// generated: the serialization benchmark (no duplicates, the worst
// case for the body's size).
func bigBatch(b *testing.B) trainerbridge.Batch {
	plan, _ := trainertest.MustBatches(b, trainertest.BatchSpec{Run: "bench", Step: 1, Queries: 512, K: 8, DBar: 1, MinTokens: 8192, MaxTokens: 8192, Generated: 0.2, Seed: 1})
	if len(plan.Samples) != 4096 {
		b.Fatalf("%d samples, want 4096", len(plan.Samples))
	}
	return plan
}

// BenchmarkEncodeStep measures the step body's serialization. b.SetBytes
// is the JSON's size, so MB/s is JSON bytes produced per second; the
// gzip case reports the compressed size too.
func BenchmarkEncodeStep(b *testing.B) {
	batch := bigBatch(b)
	h := stepHeader{Key: batch.IdempotencyKey(), Run: batch.Run, Role: batch.Role, Step: batch.Step}
	var plain countWriter
	if err := encodeStep(&plain, h, batch); err != nil {
		b.Fatal(err)
	}
	b.Run("json", func(b *testing.B) {
		b.SetBytes(plain.n)
		b.ReportAllocs()
		for b.Loop() {
			if err := encodeStep(io.Discard, h, batch); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json+gzip", func(b *testing.B) {
		b.SetBytes(plain.n)
		b.ReportAllocs()
		var body []byte
		for b.Loop() {
			var err error
			if body, err = encodeBody(h, batch, true); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(body))/1e6, "gzip_MB")
		b.ReportMetric(float64(plain.n)/1e6, "json_MB")
	})
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
