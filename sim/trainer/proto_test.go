package trainer

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// The protobuf bodies here are built field by field with protowire from
// the documented layout (see proto.go), as the SDK's encoder lays them out.

func pbBytes(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func pbVarint(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func pbEntry(key string, value []byte) []byte { return pbBytes(pbBytes(nil, 1, []byte(key)), 2, value) }

// pbDatum is d as a Datum message; weights are left out when noWeights.
func (d *tdatum) proto(noWeights bool) []byte {
	n := len(d.tokens) - 1
	var toks, tgts []byte
	for j := 0; j < n; j++ {
		toks = binary.LittleEndian.AppendUint32(toks, uint32(d.tokens[j]))
		tgts = binary.LittleEndian.AppendUint64(tgts, uint64(d.tokens[j+1]))
	}
	f32 := func(v []float64) []byte {
		var b []byte
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(x)))
		}
		return b
	}
	tensor := func(dense []byte, dtype uint64) []byte {
		t := pbBytes(nil, 1, dense)
		t = pbVarint(t, 3, dtype)
		return pbBytes(t, 4, protowire.AppendVarint(nil, uint64(n)))
	}
	m := pbBytes(nil, 1, pbBytes(nil, 1, pbBytes(nil, 1, toks)))
	m = pbBytes(m, 2, pbEntry("target_tokens", tensor(tgts, 2)))
	if !noWeights {
		m = pbBytes(m, 2, pbEntry("weights", tensor(f32(d.weights), 1)))
	}
	m = pbBytes(m, 2, pbEntry("logprobs", tensor(f32(d.lps), 1)))
	return pbBytes(m, 2, pbEntry("advantages", tensor(f32(d.advs), 1)))
}

func pbRequest(model string, seq int, loss string, forwardOnly, noWeights bool, data ...*tdatum) []byte {
	b := pbBytes(nil, 1, []byte(model))
	b = pbVarint(b, 2, uint64(seq))
	for _, d := range data {
		b = pbBytes(b, 3, d.proto(noWeights))
	}
	b = pbBytes(b, 4, []byte(loss))
	if forwardOnly {
		b = pbVarint(b, 6, 1)
	}
	return b
}

// postProto sends a protobuf forward_backward and returns its request_id.
func (ts *testServer) postProto(body []byte) any {
	ts.t.Helper()
	resp, err := http.Post(ts.url+"/api/v1/forward_backward", protoContentType, bytes.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	m := decodeAnswer(ts.t, "forward_backward", resp.Body)
	if resp.StatusCode != http.StatusOK {
		ts.t.Fatalf("protobuf forward_backward: %d %v", resp.StatusCode, m)
	}
	return m["request_id"]
}

// retrieveProto polls a future asking for protobuf, as the SDK does.
func (ts *testServer) retrieveProto(id any) (string, []byte) {
	ts.t.Helper()
	for range 100 {
		req, _ := http.NewRequest(http.MethodPost, ts.url+"/api/v1/retrieve_future", strings.NewReader(`{"request_id":"`+id.(string)+`"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/x-protobuf, application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ts.t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusRequestTimeout {
			continue
		}
		return resp.Header.Get("Content-Type"), b
	}
	ts.t.Fatal("no result")
	return "", nil
}

// readOutput decodes a ForwardBackwardOutput: metrics and, per field, the
// per-datum float32 values.
func readOutput(t *testing.T, b []byte) (map[string]float64, map[string][][]float32, int) {
	t.Helper()
	metrics, outs, datums := map[string]float64{}, map[string][][]float32{}, 0
	top, err := fields(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range top {
		switch f.num {
		case 2:
			rec, _ := fields(f.bytes)
			for _, r := range rec {
				switch r.num {
				case 2:
					name, bt, _ := mapEntry(r.bytes)
					var data, offs []byte
					btf, _ := fields(bt.bytes)
					for _, g := range btf {
						switch g.num {
						case 1:
							data = g.bytes
						case 2:
							offs = g.bytes
						case 3:
							if g.bits != dtypeFloat32 {
								t.Errorf("%s dtype %d, want float32", name, g.bits)
							}
						}
					}
					for i := 8; i < len(offs); i += 8 {
						lo, hi := binary.LittleEndian.Uint64(offs[i-8:]), binary.LittleEndian.Uint64(offs[i:])
						var v []float32
						for k := lo; k < hi; k += 4 {
							v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(data[k:])))
						}
						outs[name] = append(outs[name], v)
					}
				case 3:
					datums += int(r.bits)
				}
			}
		case 3:
			k, v, _ := mapEntry(f.bytes)
			metrics[k] = math.Float64frombits(v.bits)
		}
	}
	return metrics, outs, datums
}

func TestProtobufForwardBackward(t *testing.T) {
	jsonSide := newTestServer(t, Config{})
	protoSide := newTestServer(t, Config{})
	jm, pm := jsonSide.newModel(), protoSide.newModel()
	data := []*tdatum{newDatum([]int{0, 1, 2, 3, 1}, 2, -1.25, 0.5), newDatum([]int{3, 2, 1}, 1, -0.5, -1)}

	want := jsonSide.call("forward_backward", fwdBwd(jm, 1, "ppo", nil, data...))
	ctype, b := protoSide.retrieveProto(protoSide.postProto(pbRequest(pm, 1, "ppo", false, false, data...)))
	if ctype != protoContentType {
		t.Fatalf("result Content-Type %q: want %s", ctype, protoContentType)
	}
	metrics, outs, datums := readOutput(t, b)
	if datums != 2 || len(outs["logprobs"]) != 2 || len(outs["logprobs"][0]) != 4 {
		t.Fatalf("num_datums %d, logprobs %v", datums, outs["logprobs"])
	}
	for k, v := range want["metrics"].(map[string]any) {
		if metrics[k] != v.(float64) {
			t.Errorf("metric %s: protobuf %v, JSON %v", k, metrics[k], v)
		}
	}
	// The same step trained: the optimizer sees the same gradient.
	jo := jsonSide.call("optim_step", optim(jm, 2, 0.1))
	po := protoSide.call("optim_step", optim(pm, 2, 0.1))
	if metric(t, jo, "grad_norm") != metric(t, po, "grad_norm") {
		t.Errorf("grad_norm JSON %v, protobuf %v", metric(t, jo, "grad_norm"), metric(t, po, "grad_norm"))
	}
	// A replay of the protobuf body answers the same future; the JSON
	// answer is there for older clients.
	id := protoSide.postProto(pbRequest(pm, 1, "ppo", false, false, data...))
	if res := protoSide.result(id); res["loss_fn_output_type"] != "ArrayRecord" {
		t.Errorf("JSON answer of a protobuf request: %v", res)
	}
	// forward_only is a forward: no gradient.
	protoSide.result(protoSide.postProto(pbRequest(pm, 3, "ppo", true, false, data...)))
	if o := protoSide.call("optim_step", optim(pm, 4, 0.1)); metric(t, o, "datums") != 0 {
		t.Errorf("forward_only trained %v datums", metric(t, o, "datums"))
	}
}

func TestMissingWeightsTrainWhereAdvantages(t *testing.T) {
	a, b := newTestServer(t, Config{}), newTestServer(t, Config{})
	am, bm := a.newModel(), b.newModel()
	d := newDatum([]int{0, 1, 2, 3, 1}, 2, -1, 0.5) // weights 0 exactly where the advantage is 0
	a.result(a.postProto(pbRequest(am, 1, "importance_sampling", false, false, d)))
	b.result(b.postProto(pbRequest(bm, 1, "importance_sampling", false, true, d)))
	ga := metric(t, a.call("optim_step", optim(am, 2, 0.1)), "grad_norm")
	gb := metric(t, b.call("optim_step", optim(bm, 2, 0.1)), "grad_norm")
	if ga != gb || ga == 0 {
		t.Errorf("grad_norm with weights %v, without %v: want equal and non-zero", ga, gb)
	}
}

func TestSaveStateLoadIntoFreshModel(t *testing.T) {
	ts := newTestServer(t, Config{})
	model := ts.newModel()
	d := newDatum([]int{0, 1, 2, 3, 1}, 2, -1, 0.5)
	ts.call("forward_backward", fwdBwd(model, 1, "ppo", nil, d))
	ts.call("optim_step", optim(model, 2, 0.1))
	saved := ts.call("save_weights", map[string]any{"model_id": model, "path": "s1", "seq_id": 3, "type": "save_weights"})
	path, _ := saved["path"].(string)
	if path != "tinker://"+model+"/weights/s1" {
		t.Fatalf("save_weights: %v", saved)
	}
	// Training goes on; a fresh model loads the state with its optimizer
	// and trains the next step as the first model did.
	ts.call("forward_backward", fwdBwd(model, 4, "ppo", nil, d))
	ts.call("optim_step", optim(model, 5, 0.1))
	fresh := ts.newModel()
	if res := ts.call("load_weights", map[string]any{"model_id": fresh, "path": path, "optimizer": true, "seq_id": 1}); res["path"] != path {
		t.Fatalf("load_weights: %v", res)
	}
	ts.call("forward_backward", fwdBwd(fresh, 2, "ppo", nil, d))
	ts.call("optim_step", optim(fresh, 3, 0.1))
	p1, _ := ts.Params(model)
	p2, _ := ts.Params(fresh)
	if !reflect.DeepEqual(p1, p2) {
		t.Error("a fresh model that loaded the state and trained the same step differs from the original")
	}
	info := ts.mustPost("weights_info", map[string]any{"tinker_path": path})
	if info["base_model"] != testBase || info["is_lora"] != true {
		t.Errorf("weights_info: %v", info)
	}
	// A save without a path is named after its seq_id.
	if res := ts.call("save_weights_for_sampler", map[string]any{"model_id": fresh, "seq_id": 4}); res["path"] != "tinker://"+fresh+"/sampler_weights/sampler-000004" {
		t.Errorf("save_weights_for_sampler without path: %v", res)
	}
	resp, err := http.Get(ts.url + "/api/v1/training_runs?limit=10")
	if err != nil {
		t.Fatal(err)
	}
	runs := decodeAnswer(t, "training_runs", resp.Body)
	resp.Body.Close()
	if list, _ := runs["training_runs"].([]any); len(list) != 2 {
		t.Errorf("training_runs: %v", runs)
	}
	resp, err = http.Get(ts.url + "/api/v1/training_runs/" + model + "/checkpoints")
	if err != nil {
		t.Fatal(err)
	}
	cks := decodeAnswer(t, "checkpoints", resp.Body)
	resp.Body.Close()
	if list, _ := cks["checkpoints"].([]any); len(list) != 1 || list[0].(map[string]any)["tinker_path"] != path {
		t.Errorf("checkpoints of %s: %v", model, cks)
	}
}

func TestClientConfigAndTelemetry(t *testing.T) {
	ts := newTestServer(t, Config{ChunkDatums: 7, Faults: Faults{Rate500: 1}})
	cfg := ts.mustPost("client/config", map[string]any{"sdk_version": "0.31.0"})
	if cfg["fwdbwd_max_chunk_len"] != 7.0 || cfg["pjwt_auth_enabled"] != false || cfg["proto_compress_fwdbwd"] != false {
		t.Errorf("client/config: %v", cfg)
	}
	if res := ts.mustPost("telemetry", map[string]any{"events": []any{}, "platform": "linux", "sdk_version": "0.31.0", "session_id": "s"}); res["status"] != "accepted" {
		t.Errorf("telemetry: %v", res)
	}
}
