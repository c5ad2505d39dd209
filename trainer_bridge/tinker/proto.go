package tinker

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/trainer_bridge/tinker/tinkerpb"
)

// The protobuf wire of forward_backward: the SDK's ForwardBackwardRequest
// (tinker_public), sent with Content-Type application/x-protobuf, and its
// ForwardBackwardOutput, read when the poll's Accept brought one. Bodies
// are marshalled deterministically, so a replay sends the same bytes.

// protoEnvelope is what every protobuf forward_backward request of a plan
// shares.
type protoEnvelope struct {
	modelID, loss string
	config        map[string]float64
}

var deterministic = proto.MarshalOptions{Deterministic: true}

// request is the ForwardBackwardRequest of data with seq.
func (e protoEnvelope) request(data []*tinkerpb.Datum, seq int64) *tinkerpb.ForwardBackwardRequest {
	return &tinkerpb.ForwardBackwardRequest{
		ModelId: e.modelID, SeqId: int32(seq), Data: data, LossFn: e.loss, LossFnConfig: e.config,
	}
}

// body is the marshalled request of samples with seq.
func (e protoEnvelope) body(samples []*rollout.Sample, seq int64) ([]byte, error) {
	data := make([]*tinkerpb.Datum, len(samples))
	for i, s := range samples {
		data[i] = protoDatum(s)
	}
	return deterministic.Marshal(e.request(data, seq))
}

// protoDatum is shift(s) as a Datum: tokens as int32 bytes, targets as
// int64 bytes, weights, logprobs and advantages as float32 bytes. s must
// have passed checkSample.
func protoDatum(s *rollout.Sample) *tinkerpb.Datum {
	n := len(s.InputIDs) - 1
	toks := make([]byte, 0, 4*n)
	tgts := make([]byte, 0, 8*n)
	w := make([]byte, 0, 4*n)
	lp := make([]byte, 0, 4*n)
	adv := make([]byte, 0, 4*n)
	for j := 0; j < n; j++ {
		toks = binary.LittleEndian.AppendUint32(toks, uint32(int32(s.InputIDs[j])))
		tgts = binary.LittleEndian.AppendUint64(tgts, uint64(int64(s.InputIDs[j+1])))
		var wj, lpj, advj float32
		if s.LossMask[j+1] != 0 {
			wj, lpj, advj = 1, float32(s.Logprobs[j+1]), float32(s.Advantage)
		}
		w = binary.LittleEndian.AppendUint32(w, math.Float32bits(wj))
		lp = binary.LittleEndian.AppendUint32(lp, math.Float32bits(lpj))
		adv = binary.LittleEndian.AppendUint32(adv, math.Float32bits(advj))
	}
	shape := []int64{int64(n)}
	tensor := func(b []byte, dt tinkerpb.DType) *tinkerpb.Tensor {
		return &tinkerpb.Tensor{Encoding: &tinkerpb.Tensor_Dense{Dense: b}, Dtype: dt, Shape: shape}
	}
	return &tinkerpb.Datum{
		ModelInput: []*tinkerpb.Chunk{{Chunk: &tinkerpb.Chunk_EncodedText{EncodedText: &tinkerpb.EncodedTextChunk{Tokens: toks}}}},
		LossFnInputs: map[string]*tinkerpb.Tensor{
			"target_tokens": tensor(tgts, tinkerpb.DType_DTYPE_INT64),
			"weights":       tensor(w, tinkerpb.DType_DTYPE_FLOAT32),
			"logprobs":      tensor(lp, tinkerpb.DType_DTYPE_FLOAT32),
			"advantages":    tensor(adv, tinkerpb.DType_DTYPE_FLOAT32),
		},
	}
}

// chunkProto splits p's samples into protobuf forward_backward requests
// of at most maxDatums datums and maxBytes bytes of serialized body (the
// SDK's limits count the protobuf before compression), as chunkJSON does
// for JSON; a datum too big for a request goes alone.
func (p plan) chunkProto(env protoEnvelope, firstSeq int64, maxDatums, maxBytes int, emit func(k int, body []byte) error) (plan, error) {
	var (
		data []*tinkerpb.Datum
		size int
		lo   int
	)
	envSize := func(seq int64) int { return proto.Size(env.request(nil, seq)) }
	flush := func(hi int) error {
		seq := firstSeq + int64(len(p.chunks))
		p.chunks = append(p.chunks, span{lo, hi})
		lo = hi
		defer func() { data, size = data[:0], 0 }()
		if emit == nil {
			return nil
		}
		body, err := deterministic.Marshal(env.request(data, seq))
		if err != nil {
			return fmt.Errorf("encode forward_backward: %w", err)
		}
		return emit(len(p.chunks)-1, body)
	}
	for i, s := range p.samples {
		d := protoDatum(s)
		n := proto.Size(d)
		n += protowire.SizeTag(3) + protowire.SizeBytes(n) - n
		seq := firstSeq + int64(len(p.chunks))
		if i > lo && (i-lo >= maxDatums || envSize(seq)+size+n > maxBytes) {
			if err := flush(i); err != nil {
				return plan{}, err
			}
		}
		data = append(data, d)
		size += n
	}
	if lo < len(p.samples) {
		if err := flush(len(p.samples)); err != nil {
			return plan{}, err
		}
	}
	return p, nil
}

// decodeProto reads a ForwardBackwardOutput: the metrics, and one output
// per datum (their values are not read by the bridge).
func (o *fbOutput) decodeProto(b []byte) error {
	var out tinkerpb.ForwardBackwardOutput
	if err := proto.Unmarshal(b, &out); err != nil {
		return err
	}
	o.Metrics = out.GetMetrics()
	n := 0
	for _, r := range out.GetLossFnOutputs() {
		n += int(r.GetNumDatums())
	}
	o.LossFnOutputs = make([]json.RawMessage, n)
	return nil
}
