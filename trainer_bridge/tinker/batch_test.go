package tinker

import (
	"encoding/binary"
	"math"
	"slices"

	"google.golang.org/protobuf/proto"

	"bytes"
	"encoding/json"
	"testing"

	"github.com/mgrpo/mgrpo/trainer_bridge/tinker/tinkerpb"

	"github.com/mgrpo/mgrpo/rollout"
)

// benchBatch returns n samples of tokens tokens: a quarter prompt, the rest
// generated with varied logprobs. The samples share their token slices
// (samples are read-only), so the batch costs little memory while the
// encoder does all the work.
func benchBatch(n, tokens int) []rollout.Sample {
	ids := make([]int, tokens)
	mask := make([]int8, tokens)
	lps := make([]float64, tokens)
	for i := range ids {
		ids[i] = (i*7919 + 13) % 151_936
		if i >= tokens/4 {
			mask[i] = 1
			lps[i] = -float64(i%97+1) / 37
		}
	}
	out := make([]rollout.Sample, n)
	for i := range out {
		out[i] = rollout.Sample{InputIDs: ids, LossMask: mask, Logprobs: lps, Advantage: float64(i%16-8) / 7}
	}
	return out
}

// BenchmarkSerializeBatch encodes a step of 4,096 samples of 8k tokens
// into forward_backward bodies (shift, JSON, chunking); MB/s counts the
// JSON written.
func BenchmarkSerializeBatch(b *testing.B) {
	samples := benchBatch(4096, 8192)
	env, err := newEnvelope("model_0123456789", "ppo", map[string]float64{"clip_low_threshold": 0.8, "clip_high_threshold": 1.2})
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	emit := func(_ int, body []byte) error { total += int64(len(body)); return nil }
	if _, err := makePlan(samples, env, 1, DefaultMaxDatums, DefaultMaxBytes, emit); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(total)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := makePlan(samples, env, 1, DefaultMaxDatums, DefaultMaxBytes, func(int, []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSerializeBatchProtobuf encodes the same step into protobuf
// forward_backward bodies (the default wire against servers that answer
// client/config); MB/s counts the protobuf written, and json-MB/s the
// JSON the same step would be, for comparison with the JSON figure.
func BenchmarkSerializeBatchProtobuf(b *testing.B) {
	samples := benchBatch(4096, 8192)
	p, err := selectSamples(samples)
	if err != nil {
		b.Fatal(err)
	}
	env := protoEnvelope{modelID: "model_0123456789", loss: "ppo", config: map[string]float64{"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}}
	var total int64
	if _, err := p.chunkProto(env, 1, DefaultMaxDatums, DefaultMaxBytes, func(_ int, body []byte) error { total += int64(len(body)); return nil }); err != nil {
		b.Fatal(err)
	}
	jenv, err := newEnvelope(env.modelID, env.loss, env.config)
	if err != nil {
		b.Fatal(err)
	}
	var jsonTotal int64
	if _, err := makePlan(samples, jenv, 1, DefaultMaxDatums, DefaultMaxBytes, func(_ int, body []byte) error { jsonTotal += int64(len(body)); return nil }); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(total)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		q, err := selectSamples(samples)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := q.chunkProto(env, 1, DefaultMaxDatums, DefaultMaxBytes, func(int, []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(jsonTotal)*float64(b.N)/b.Elapsed().Seconds()/1e6, "json-MB/s")
}

// BenchmarkSerializeBatchEncodingJSON is the same batch through the
// reference shift and encoding/json, for comparison (one request's worth
// of samples, scaled by SetBytes).
func BenchmarkSerializeBatchEncodingJSON(b *testing.B) {
	samples := benchBatch(64, 8192)
	var n int64
	for i := range samples {
		js, _ := json.Marshal(shift(&samples[i]))
		n += int64(len(js))
	}
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		for i := range samples {
			if _, err := json.Marshal(shift(&samples[i])); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestPlanBodiesMatchEncodingJSON checks the bodies the plan emits are
// the envelope around encoding/json's datums.
func TestPlanBodiesMatchEncodingJSON(t *testing.T) {
	samples := benchBatch(5, 40)
	samples = append(samples, rollout.Sample{InputIDs: []int{1}, LossMask: []int8{0}, Logprobs: []float64{0}})
	env, err := newEnvelope("m", "importance_sampling", nil)
	if err != nil {
		t.Fatal(err)
	}
	var bodies [][]byte
	p, err := makePlan(samples, env, 41, 2, DefaultMaxBytes, func(_ int, body []byte) error {
		bodies = append(bodies, bytes.Clone(body))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.chunks) != 3 || p.short != 1 || len(bodies) != 3 {
		t.Fatalf("plan %+v, %d bodies", p.chunks, len(bodies))
	}
	for k, sp := range p.chunks {
		var data []datum
		for _, s := range p.samples[sp.lo:sp.hi] {
			data = append(data, shift(s))
		}
		want, _ := json.Marshal(map[string]any{
			"forward_backward_input": map[string]any{"data": data, "loss_fn": "importance_sampling"},
			"model_id":               "m",
			"seq_id":                 41 + k,
		})
		var got, exp any
		if err := json.Unmarshal(bodies[k], &got); err != nil {
			t.Fatalf("body %d: %v", k, err)
		}
		_ = json.Unmarshal(want, &exp)
		gj, _ := json.Marshal(got)
		ej, _ := json.Marshal(exp)
		if !bytes.Equal(gj, ej) {
			t.Errorf("body %d differs from encoding/json's", k)
		}
		if again := env.body(nil, p.samples[sp.lo:sp.hi], 41+int64(k)); !bytes.Equal(again, bodies[k]) {
			t.Errorf("body %d re-encoded differs: a resubmission would not be the same request", k)
		}
	}
}

// TestProtobufBodiesDecode checks the protobuf plan: chunks within the
// limits, and every datum decoding to shift's values.
func TestProtobufBodiesDecode(t *testing.T) {
	samples := benchBatch(9, 40)
	p, err := selectSamples(samples)
	if err != nil {
		t.Fatal(err)
	}
	env := protoEnvelope{modelID: "m", loss: "importance_sampling"}
	var seqs []int32
	got, err := p.chunkProto(env, 41, 4, 1<<20, func(k int, body []byte) error {
		var req tinkerpb.ForwardBackwardRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			return err
		}
		seqs = append(seqs, req.GetSeqId())
		for i, d := range req.GetData() {
			want := shift(p.samples[4*k+i])
			in := d.GetLossFnInputs()
			for j := range want.LossFnInputs.Weights.Data {
				if g := math.Float32frombits(binary.LittleEndian.Uint32(in["logprobs"].GetDense()[4*j:])); g != want.LossFnInputs.Logprobs.Data[j] {
					t.Fatalf("chunk %d datum %d logprob %d = %v, want %v", k, i, j, g, want.LossFnInputs.Logprobs.Data[j])
				}
				if g := int64(binary.LittleEndian.Uint64(in["target_tokens"].GetDense()[8*j:])); g != want.LossFnInputs.TargetTokens.Data[j] {
					t.Fatalf("chunk %d datum %d target %d = %v", k, i, j, g)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.chunks) != 3 || !slices.Equal(seqs, []int32{41, 42, 43}) {
		t.Errorf("chunks %v, seq_ids %v: want 3 of at most 4 datums, seq_ids 41-43", got.chunks, seqs)
	}
	// A byte limit splits too, and one body is the same bytes each time.
	var sizes []int
	if _, err := p.chunkProto(env, 1, 1024, 1500, func(_ int, body []byte) error { sizes = append(sizes, len(body)); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, n := range sizes[:len(sizes)-1] {
		if n > 1500 {
			t.Errorf("body of %d bytes over the 1,500 limit", n)
		}
	}
	a, _ := env.body(p.samples[:3], 7)
	b, _ := env.body(p.samples[:3], 7)
	if !bytes.Equal(a, b) || len(sizes) < 2 {
		t.Errorf("bodies not deterministic, or %d chunks for a 1,500-byte limit", len(sizes))
	}
}
