package trainer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// The protobuf wire of forward_backward, read and written field by field
// with protowire: the sim keeps its own codec of the Tinker SDK's public
// messages (package tinker_public) rather than the client's generated
// types, so a wrong field number on either side fails the conformance
// tests instead of being shared. Field numbers, as the SDK's descriptors
// have them:
//
//	ForwardBackwardRequest  1 model_id  2 seq_id (int32)  3 data (Datum)  4 loss_fn
//	                        5 loss_fn_config (map<string,double>)  6 forward_only
//	                        7 loss_fn_config_v2 (map<string,LossConfigValue{1 number, 2 text}>)
//	Datum                   1 model_input (Chunk)  2 loss_fn_inputs (map<string,Tensor>)
//	Chunk                   1 encoded_text {1 tokens: int32 bytes}  2 image
//	Tensor                  1 dense  2 sparse_csr {1 values, 2 crow_indices, 3 col_indices}
//	                        3 dtype  4 shape
//	ForwardBackwardOutput   1 loss_fn_output_type  2 loss_fn_outputs (ArrayRecord)  3 metrics
//	ArrayRecord             1 type_tag  2 fields (map<string,BatchedTensor>)  3 num_datums
//	BatchedTensor           1 data  2 offsets (int64 byte offsets)  3 dtype  4 trailing_shape
//	SampleResponse          1 sequences (SampledSequence)  2 prompt_logprobs (float32 bytes, NaN where none)
//	SampledSequence         1 stop_reason (0 stop, 1 length)  2 tokens (int32 bytes)  3 logprobs (float32 bytes)
//
// DType: 1 float32, 2 int64, 3 int32, 4 bfloat16; all little-endian.

// protoContentType is the media type of protobuf bodies.
const protoContentType = "application/x-protobuf"

// The DType enum.
const (
	dtypeFloat32  = 1
	dtypeInt64    = 2
	dtypeInt32    = 3
	dtypeBFloat16 = 4
)

// protoRequest is a decoded protobuf forward_backward body.
type protoRequest struct {
	ModelID     string     `json:"model_id"`
	SeqID       int64      `json:"seq_id"`
	Input       *lossInput `json:"input"`
	ForwardOnly bool       `json:"forward_only"`
}

// field is one field of a message: its number and wire type, and its
// value (varint or fixed bits, or the bytes of a length-delimited field).
type field struct {
	num   protowire.Number
	typ   protowire.Type
	bits  uint64
	bytes []byte
}

// fields splits a message into its fields.
func fields(b []byte) ([]field, error) {
	var out []field
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.bits, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			f.bits, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.bits = uint64(v)
		case protowire.BytesType:
			f.bytes, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return nil, fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		out = append(out, f)
	}
	return out, nil
}

// mapEntry reads a map entry: key (1) and value (2) fields.
func mapEntry(b []byte) (string, field, error) {
	fs, err := fields(b)
	if err != nil {
		return "", field{}, err
	}
	var key string
	var val field
	for _, f := range fs {
		switch f.num {
		case 1:
			key = string(f.bytes)
		case 2:
			val = f
		}
	}
	return key, val, nil
}

// decodeForwardBackwardProto reads a ForwardBackwardRequest.
func decodeForwardBackwardProto(b []byte) (protoRequest, error) {
	req := protoRequest{Input: &lossInput{}}
	fs, err := fields(b)
	if err != nil {
		return req, err
	}
	for _, f := range fs {
		switch f.num {
		case 1:
			req.ModelID = string(f.bytes)
		case 2:
			req.SeqID = int64(int32(f.bits))
		case 3:
			d, err := decodeDatum(f.bytes)
			if err != nil {
				return req, fmt.Errorf("data[%d]: %w", len(req.Input.Data), err)
			}
			req.Input.Data = append(req.Input.Data, d)
		case 4:
			req.Input.LossFn = string(f.bytes)
		case 5, 7:
			k, v, err := mapEntry(f.bytes)
			if err != nil {
				return req, fmt.Errorf("loss_fn_config: %w", err)
			}
			x := math.Float64frombits(v.bits)
			if f.num == 7 {
				// LossConfigValue: only numbers are losses' thresholds here.
				inner, err := fields(v.bytes)
				if err != nil {
					return req, fmt.Errorf("loss_fn_config_v2[%s]: %w", k, err)
				}
				ok := false
				for _, g := range inner {
					if g.num == 1 {
						x, ok = math.Float64frombits(g.bits), true
					}
				}
				if !ok {
					return req, fmt.Errorf("loss_fn_config_v2[%s]: only numbers are served", k)
				}
			}
			if req.Input.LossFnConfig == nil {
				req.Input.LossFnConfig = map[string]float64{}
			}
			// loss_fn_config_v2 supersedes the float map (the SDK mirrors
			// floats into both).
			if _, set := req.Input.LossFnConfig[k]; !set || f.num == 7 {
				req.Input.LossFnConfig[k] = x
			}
		case 6:
			req.ForwardOnly = f.bits != 0
		}
	}
	return req, nil
}

func decodeDatum(b []byte) (wireDatum, error) {
	var d wireDatum
	fs, err := fields(b)
	if err != nil {
		return d, err
	}
	for _, f := range fs {
		switch f.num {
		case 1:
			cs, err := fields(f.bytes)
			if err != nil {
				return d, fmt.Errorf("model_input: %w", err)
			}
			for _, c := range cs {
				switch c.num {
				case 1:
					inner, err := fields(c.bytes)
					if err != nil {
						return d, fmt.Errorf("model_input.encoded_text: %w", err)
					}
					ch := chunk{Type: "encoded_text"}
					for _, g := range inner {
						if g.num == 1 {
							if len(g.bytes)%4 != 0 {
								return d, fmt.Errorf("model_input.encoded_text.tokens: %d bytes, not int32s", len(g.bytes))
							}
							for i := 0; i < len(g.bytes); i += 4 {
								ch.Tokens = append(ch.Tokens, int64(int32(binary.LittleEndian.Uint32(g.bytes[i:]))))
							}
						}
					}
					d.ModelInput.Chunks = append(d.ModelInput.Chunks, ch)
				case 2:
					d.ModelInput.Chunks = append(d.ModelInput.Chunks, chunk{Type: "image"})
				}
			}
		case 2:
			k, v, err := mapEntry(f.bytes)
			if err != nil {
				return d, fmt.Errorf("loss_fn_inputs: %w", err)
			}
			t, err := decodeTensor(v.bytes)
			if err != nil {
				return d, fmt.Errorf("loss_fn_inputs.%s: %w", k, err)
			}
			if d.LossFnInputs == nil {
				d.LossFnInputs = map[string]*tensorData{}
			}
			d.LossFnInputs[k] = t
		}
	}
	return d, nil
}

// decodeTensor reads a Tensor; int32 reads as int64 and bfloat16 as
// float32, the public dtypes (the SDK collapses them the same way).
func decodeTensor(b []byte) (*tensorData, error) {
	fs, err := fields(b)
	if err != nil {
		return nil, err
	}
	var (
		dense, values, crow, col []byte
		sparse                   bool
		dtype                    uint64
		shape                    []int
	)
	for _, f := range fs {
		switch f.num {
		case 1:
			dense = f.bytes
		case 2:
			sparse = true
			inner, err := fields(f.bytes)
			if err != nil {
				return nil, fmt.Errorf("sparse_csr: %w", err)
			}
			for _, g := range inner {
				switch g.num {
				case 1:
					values = g.bytes
				case 2:
					crow = g.bytes
				case 3:
					col = g.bytes
				}
			}
		case 3:
			dtype = f.bits
		case 4:
			if f.typ == protowire.BytesType { // packed
				for p := f.bytes; len(p) > 0; {
					v, n := protowire.ConsumeVarint(p)
					if n < 0 {
						return nil, fmt.Errorf("shape: %w", protowire.ParseError(n))
					}
					shape = append(shape, int(int64(v)))
					p = p[n:]
				}
			} else {
				shape = append(shape, int(int64(f.bits)))
			}
		}
	}
	t := &tensorData{Shape: shape}
	var vals []float64
	switch {
	case sparse:
		v, err := elements(values, dtype)
		if err != nil {
			return nil, err
		}
		vals, err = densify(v, crow, col, shape)
		if err != nil {
			return nil, fmt.Errorf("sparse_csr: %w", err)
		}
		t.Shape = []int{len(vals)}
	default:
		if vals, err = elements(dense, dtype); err != nil {
			return nil, err
		}
	}
	t.Data = vals
	switch dtype {
	case dtypeFloat32, dtypeBFloat16:
		t.Dtype = "float32"
	default:
		t.Dtype = "int64"
	}
	return t, nil
}

// elements decodes little-endian values of a DType.
func elements(b []byte, dtype uint64) ([]float64, error) {
	size := map[uint64]int{dtypeFloat32: 4, dtypeInt64: 8, dtypeInt32: 4, dtypeBFloat16: 2}[dtype]
	if size == 0 {
		return nil, fmt.Errorf("dtype %d: want 1 (float32), 2 (int64), 3 (int32) or 4 (bfloat16)", dtype)
	}
	if len(b)%size != 0 {
		return nil, fmt.Errorf("%d bytes of %d-byte elements", len(b), size)
	}
	out := make([]float64, len(b)/size)
	for i := range out {
		p := b[i*size:]
		switch dtype {
		case dtypeFloat32:
			out[i] = jsonFloat32(math.Float32frombits(binary.LittleEndian.Uint32(p)))
		case dtypeInt64:
			out[i] = float64(int64(binary.LittleEndian.Uint64(p)))
		case dtypeInt32:
			out[i] = float64(int32(binary.LittleEndian.Uint32(p)))
		case dtypeBFloat16:
			out[i] = jsonFloat32(math.Float32frombits(uint32(binary.LittleEndian.Uint16(p)) << 16))
		}
	}
	return out, nil
}

// jsonFloat32 is the value the sim trains with for a float32 f: the
// decimal of f's shortest form (what a JSON body carries for it) read at
// float64 precision, as the sim's JSON path has always read it. The two
// wires so train the very same numbers; a GPU trainer would keep f
// itself, which differs from that decimal in the float64 digits below
// float32's precision.
func jsonFloat32(f float32) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	if err != nil {
		return float64(f)
	}
	return v
}

// densify expands a CSR matrix of the given shape (its last dimension the
// columns) to its row-major values.
func densify(values []float64, crowB, colB []byte, shape []int) ([]float64, error) {
	crow, err := elements(crowB, dtypeInt64)
	if err != nil {
		return nil, fmt.Errorf("crow_indices: %w", err)
	}
	col, err := elements(colB, dtypeInt64)
	if err != nil {
		return nil, fmt.Errorf("col_indices: %w", err)
	}
	if len(shape) == 0 || len(col) != len(values) || len(crow) < 1 {
		return nil, errors.New("inconsistent shape, indices and values")
	}
	cols := shape[len(shape)-1]
	total := 1
	for _, s := range shape {
		total *= s
	}
	rows := len(crow) - 1
	if cols <= 0 || rows*cols != total {
		return nil, fmt.Errorf("%d rows of %d columns for shape %v", rows, cols, shape)
	}
	out := make([]float64, total)
	for r := range rows {
		for k := int(crow[r]); k < int(crow[r+1]); k++ {
			if k < 0 || k >= len(values) || int(col[k]) < 0 || int(col[k]) >= cols {
				return nil, fmt.Errorf("index %d out of range", k)
			}
			out[r*cols+int(col[k])] = values[k]
		}
	}
	return out, nil
}

// encodeForwardBackwardProto writes a ForwardBackwardOutput: one
// ArrayRecord holding every datum's outputs, field by field, as float32
// BatchedTensors.
func encodeForwardBackwardProto(out forwardBackwardOutput) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, out.LossFnOutputType)
	if len(out.LossFnOutputs) > 0 {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, encodeArrayRecord(out.LossFnOutputs))
	}
	names := make([]string, 0, len(out.Metrics))
	for k := range out.Metrics {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		var e []byte
		e = protowire.AppendTag(e, 1, protowire.BytesType)
		e = protowire.AppendString(e, k)
		e = protowire.AppendTag(e, 2, protowire.Fixed64Type)
		e = protowire.AppendFixed64(e, math.Float64bits(out.Metrics[k]))
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, e)
	}
	return b
}

func encodeArrayRecord(outs []map[string]tensorOut) []byte {
	names := map[string]bool{}
	for _, o := range outs {
		for k := range o {
			names[k] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var rec []byte
	rec = protowire.AppendTag(rec, 1, protowire.BytesType)
	rec = protowire.AppendString(rec, "ArrayRecord")
	for _, name := range sorted {
		var data []byte
		offsets := binary.LittleEndian.AppendUint64(nil, 0)
		for _, o := range outs {
			for _, v := range o[name].Data {
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(v)))
			}
			offsets = binary.LittleEndian.AppendUint64(offsets, uint64(len(data)))
		}
		var bt []byte
		bt = protowire.AppendTag(bt, 1, protowire.BytesType)
		bt = protowire.AppendBytes(bt, data)
		bt = protowire.AppendTag(bt, 2, protowire.BytesType)
		bt = protowire.AppendBytes(bt, offsets)
		bt = protowire.AppendTag(bt, 3, protowire.VarintType)
		bt = protowire.AppendVarint(bt, dtypeFloat32)
		var e []byte
		e = protowire.AppendTag(e, 1, protowire.BytesType)
		e = protowire.AppendString(e, name)
		e = protowire.AppendTag(e, 2, protowire.BytesType)
		e = protowire.AppendBytes(e, bt)
		rec = protowire.AppendTag(rec, 2, protowire.BytesType)
		rec = protowire.AppendBytes(rec, e)
	}
	rec = protowire.AppendTag(rec, 3, protowire.VarintType)
	rec = protowire.AppendVarint(rec, uint64(len(outs)))
	return rec
}

// encodeSampleResponseProto writes a SampleResponse: each sequence's
// tokens as int32 and logprobs as float32 bytes, the prompt's logprobs
// as float32 bytes with NaN where there is none (the first token).
func encodeSampleResponseProto(out sampleResponse) []byte {
	var b []byte
	for _, sq := range out.Sequences {
		var e []byte
		if sq.StopReason == "length" {
			e = protowire.AppendTag(e, 1, protowire.VarintType)
			e = protowire.AppendVarint(e, 1)
		}
		var toks []byte
		for _, t := range sq.Tokens {
			toks = binary.LittleEndian.AppendUint32(toks, uint32(int32(t)))
		}
		e = protowire.AppendTag(e, 2, protowire.BytesType)
		e = protowire.AppendBytes(e, toks)
		if sq.Logprobs != nil {
			e = protowire.AppendTag(e, 3, protowire.BytesType)
			e = protowire.AppendBytes(e, float32Bytes(sq.Logprobs))
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, e)
	}
	if out.PromptLogprobs != nil {
		vals := make([]float64, len(out.PromptLogprobs))
		for i, v := range out.PromptLogprobs {
			vals[i] = math.NaN()
			if v != nil {
				vals[i] = *v
			}
		}
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, float32Bytes(vals))
	}
	return b
}

func float32Bytes(vs []float64) []byte {
	out := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(v)))
	}
	return out
}
