package tinkerpb

import (
	"encoding/binary"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The bytes below are built field by field from the documented layout
// (field numbers and wire types of tinker_public.proto as the SDK's
// descriptors give them), not by the generated code, so that the
// generated types are checked against the layout rather than themselves.

func int32Bytes(v ...int32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

func float32Bytes(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func int64Bytes(v ...int64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

func field(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

func mapEntry(key string, value []byte) []byte {
	e := field(nil, 1, []byte(key))
	return field(e, 2, value)
}

func TestForwardBackwardRequestFromHandBuiltBytes(t *testing.T) {
	// Tensor{dense=1, dtype=3, shape=4 (packed)}.
	tensor := func(dense []byte, dtype DType, n int64) []byte {
		m := field(nil, 1, dense)
		m = protowire.AppendTag(m, 3, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(dtype))
		return field(m, 4, protowire.AppendVarint(nil, uint64(n)))
	}
	// Datum{model_input=1 [Chunk{encoded_text=1 {tokens=1}}], loss_fn_inputs=2 map}.
	chunk := field(nil, 1, field(nil, 1, int32Bytes(5, 6, 7)))
	datum := field(nil, 1, chunk)
	datum = field(datum, 2, mapEntry("target_tokens", tensor(int64Bytes(6, 7, 8), DType_DTYPE_INT64, 3)))
	datum = field(datum, 2, mapEntry("weights", tensor(float32Bytes(0, 1, 1), DType_DTYPE_FLOAT32, 3)))
	// ForwardBackwardRequest{model_id=1, seq_id=2, data=3, loss_fn=4,
	// loss_fn_config=5 map<string,double>, forward_only=6}.
	var b []byte
	b = field(b, 1, []byte("model_7"))
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, 42)
	b = field(b, 3, datum)
	b = field(b, 4, []byte("ppo"))
	entry := field(nil, 1, []byte("clip_low_threshold"))
	entry = protowire.AppendTag(entry, 2, protowire.Fixed64Type)
	entry = protowire.AppendFixed64(entry, math.Float64bits(0.8))
	b = field(b, 5, entry)
	b = protowire.AppendTag(b, 6, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)

	var got ForwardBackwardRequest
	if err := proto.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.GetModelId() != "model_7" || got.GetSeqId() != 42 || got.GetLossFn() != "ppo" || !got.GetForwardOnly() {
		t.Fatalf("got model %q seq %d loss %q forward_only %v", got.GetModelId(), got.GetSeqId(), got.GetLossFn(), got.GetForwardOnly())
	}
	if c := got.GetLossFnConfig()["clip_low_threshold"]; c != 0.8 {
		t.Errorf("loss_fn_config clip_low_threshold = %v, want 0.8", c)
	}
	if len(got.GetData()) != 1 {
		t.Fatalf("%d datums, want 1", len(got.GetData()))
	}
	d := got.GetData()[0]
	if tok := d.GetModelInput()[0].GetEncodedText().GetTokens(); string(tok) != string(int32Bytes(5, 6, 7)) {
		t.Errorf("tokens = %x", tok)
	}
	w := d.GetLossFnInputs()["weights"]
	if w.GetDtype() != DType_DTYPE_FLOAT32 || string(w.GetDense()) != string(float32Bytes(0, 1, 1)) || len(w.GetShape()) != 1 || w.GetShape()[0] != 3 {
		t.Errorf("weights = %v", w)
	}
	if tt := d.GetLossFnInputs()["target_tokens"]; tt.GetDtype() != DType_DTYPE_INT64 {
		t.Errorf("target_tokens dtype = %v", tt.GetDtype())
	}
	// And the generated encoder writes what decodes to the same message.
	again, err := proto.Marshal(&got)
	if err != nil {
		t.Fatal(err)
	}
	var round ForwardBackwardRequest
	if err := proto.Unmarshal(again, &round); err != nil || !proto.Equal(&got, &round) {
		t.Fatalf("round trip: %v", err)
	}
}

func TestForwardBackwardOutputFromHandBuiltBytes(t *testing.T) {
	// BatchedTensor{data=1, offsets=2 (int64 byte offsets), dtype=3}.
	bt := field(nil, 1, float32Bytes(-1, -2, -3))
	bt = field(bt, 2, int64Bytes(0, 4, 12))
	bt = protowire.AppendTag(bt, 3, protowire.VarintType)
	bt = protowire.AppendVarint(bt, uint64(DType_DTYPE_FLOAT32))
	// ArrayRecord{type_tag=1, fields=2 map, num_datums=3}.
	rec := field(nil, 1, []byte("ArrayRecord"))
	rec = field(rec, 2, mapEntry("logprobs", bt))
	rec = protowire.AppendTag(rec, 3, protowire.VarintType)
	rec = protowire.AppendVarint(rec, 2)
	// ForwardBackwardOutput{loss_fn_output_type=1, loss_fn_outputs=2, metrics=3}.
	out := field(nil, 1, []byte("ArrayRecord"))
	out = field(out, 2, rec)
	m := field(nil, 1, []byte("loss:sum"))
	m = protowire.AppendTag(m, 2, protowire.Fixed64Type)
	m = protowire.AppendFixed64(m, math.Float64bits(1.5))
	out = field(out, 3, m)

	var got ForwardBackwardOutput
	if err := proto.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.GetMetrics()["loss:sum"] != 1.5 || got.GetLossFnOutputType() != "ArrayRecord" {
		t.Fatalf("got %v", &got)
	}
	r := got.GetLossFnOutputs()[0]
	if r.GetNumDatums() != 2 {
		t.Errorf("num_datums = %d, want 2", r.GetNumDatums())
	}
	lp := r.GetFields()["logprobs"]
	if string(lp.GetOffsets()) != string(int64Bytes(0, 4, 12)) || lp.GetDtype() != DType_DTYPE_FLOAT32 {
		t.Errorf("logprobs = %v", lp)
	}
}
