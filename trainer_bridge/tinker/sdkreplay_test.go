package tinker_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/mgrpo/mgrpo/trainer_bridge/tinker/tinkerpb"
)

// sdkClient sends requests shaped as the official Python SDK sends them
// (headers, bodies, polling), so the sim trainer is checked against the
// SDK's wire rather than the bridge's.
type sdkClient struct {
	t    *testing.T
	base string
}

// do sends one request and returns the status, the Content-Type, the
// headers and the body of the answer.
func (c sdkClient) do(method, route, ctype, accept string, body []byte) (int, http.Header, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+"/api/v1/"+route, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("X-API-Key", testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, route, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// json posts v (or GETs when v is nil) and decodes a 200's JSON answer.
func (c sdkClient) json(method, route string, v any) (int, map[string]any) {
	c.t.Helper()
	var body []byte
	if v != nil {
		body, _ = json.Marshal(v)
	}
	st, _, b := c.do(method, route, "application/json", "application/json", body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return st, m
}

// result polls a future as the SDK does (Accept protobuf for
// forward_backward), returning the Content-Type and body of its result.
func (c sdkClient) result(id any, proto bool) (string, []byte) {
	c.t.Helper()
	accept := "application/json"
	if proto {
		accept = "application/x-protobuf, application/json"
	}
	body, _ := json.Marshal(map[string]any{"request_id": id, "allow_metadata_only": true})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		st, h, b := c.do(http.MethodPost, "retrieve_future", "application/json", accept, body)
		if st == http.StatusRequestTimeout || st == http.StatusOK && bytes.Contains(b, []byte(`"try_again"`)) {
			continue
		}
		if st != http.StatusOK {
			c.t.Fatalf("retrieve_future %v: %d %s", id, st, b)
		}
		return h.Get("Content-Type"), b
	}
	c.t.Fatalf("future %v: no result", id)
	return "", nil
}

// jsonResult submits a JSON request and returns its future's JSON result.
func (c sdkClient) jsonResult(route string, v any) map[string]any {
	c.t.Helper()
	st, m := c.json(http.MethodPost, route, v)
	if st != http.StatusOK {
		c.t.Fatalf("%s: %d %v", route, st, m)
	}
	_, b := c.result(m["request_id"], false)
	var res map[string]any
	if err := json.Unmarshal(b, &res); err != nil {
		c.t.Fatalf("%s result %s: %v", route, b, err)
	}
	return res
}

// sdkDatum is a datum as the SDK's request_conv encodes it: int32 token
// bytes, dense tensors with their dtype and shape. Without weights, as a
// cookbook RL datum has none.
func sdkDatum(tokens []int32, logprob, adv float32) *tinkerpb.Datum {
	n := len(tokens) - 1
	var in, tg, lp, ad []byte
	for j := 0; j < n; j++ {
		in = binary.LittleEndian.AppendUint32(in, uint32(tokens[j]))
		tg = binary.LittleEndian.AppendUint64(tg, uint64(tokens[j+1]))
		a := adv
		if j == 0 {
			a = 0 // the prompt token: no advantage, so no loss
		}
		lp = binary.LittleEndian.AppendUint32(lp, math.Float32bits(logprob))
		ad = binary.LittleEndian.AppendUint32(ad, math.Float32bits(a))
	}
	dense := func(b []byte, dt tinkerpb.DType) *tinkerpb.Tensor {
		return &tinkerpb.Tensor{Encoding: &tinkerpb.Tensor_Dense{Dense: b}, Dtype: dt, Shape: []int64{int64(n)}}
	}
	return &tinkerpb.Datum{
		ModelInput: []*tinkerpb.Chunk{{Chunk: &tinkerpb.Chunk_EncodedText{EncodedText: &tinkerpb.EncodedTextChunk{Tokens: in}}}},
		LossFnInputs: map[string]*tinkerpb.Tensor{
			"target_tokens": dense(tg, tinkerpb.DType_DTYPE_INT64),
			"logprobs":      dense(lp, tinkerpb.DType_DTYPE_FLOAT32),
			"advantages":    dense(ad, tinkerpb.DType_DTYPE_FLOAT32),
		},
	}
}

func (c sdkClient) forwardBackward(model string, seq int32, forwardOnly bool, data ...*tinkerpb.Datum) (int, map[string]any) {
	c.t.Helper()
	// The SDK mirrors float loss kwargs into loss_fn_config and sends
	// loss_fn_config_v2 beside it.
	req := &tinkerpb.ForwardBackwardRequest{
		ModelId: model, SeqId: seq, Data: data, LossFn: "ppo", ForwardOnly: forwardOnly,
		LossFnConfig:   map[string]float64{"clip_low_threshold": 0.8, "clip_high_threshold": 1.2},
		LossFnConfigV2: map[string]*tinkerpb.LossConfigValue{"clip_low_threshold": {Value: &tinkerpb.LossConfigValue_Number{Number: 0.8}}},
	}
	body, err := proto.Marshal(req)
	if err != nil {
		c.t.Fatal(err)
	}
	st, _, b := c.do(http.MethodPost, "forward_backward", "application/x-protobuf", "application/json", body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return st, m
}

// TestSDKWireAgainstSimTrainer replays the official SDK's calls, in its
// shapes, through the sim trainer: every call of the SDK's list answers
// as the SDK reads it.
func TestSDKWireAgainstSimTrainer(t *testing.T) {
	_, url, _ := newSimTrainer(t, simFaultsNone)
	c := sdkClient{t: t, base: url}
	ok := func(what string, cond bool, got any) {
		t.Helper()
		if !cond {
			t.Errorf("%s: got %v", what, got)
		}
	}

	st, cfg := c.json(http.MethodPost, "client/config", map[string]any{"sdk_version": "0.31.0"})
	ok("client/config", st == 200 && cfg["fwdbwd_max_chunk_len"] == 1024.0, cfg)
	st, _ = c.json(http.MethodGet, "get_server_capabilities", nil)
	ok("get_server_capabilities", st == 200, st)
	st, sess := c.json(http.MethodPost, "create_session", map[string]any{"tags": []string{"sdk"}, "user_metadata": map[string]string{}, "sdk_version": "0.31.0", "type": "create_session"})
	ok("create_session", st == 200 && sess["session_id"] != nil, sess)
	st, _ = c.json(http.MethodPost, "session_heartbeat", map[string]any{"session_id": sess["session_id"], "type": "session_heartbeat"})
	ok("session_heartbeat", st == 200, st)
	st, tel := c.json(http.MethodPost, "telemetry", map[string]any{"events": []any{map[string]any{"event": "x"}}, "platform": "linux", "sdk_version": "0.31.0", "session_id": sess["session_id"]})
	ok("telemetry", st == 200 && tel["status"] == "accepted", tel)
	created := c.jsonResult("create_model", map[string]any{"session_id": sess["session_id"], "model_seq_id": 0, "base_model": testModel,
		"lora_config": map[string]any{"rank": 8, "seed": 1, "train_unembed": true, "train_mlp": true, "train_attn": true}, "type": "create_model"})
	model, _ := created["model_id"].(string)
	ok("create_model", model != "", created)
	st, info := c.json(http.MethodPost, "get_info", map[string]any{"model_id": model, "type": "get_info"})
	ok("get_info", st == 200 && info["model_name"] == testModel, info)

	// forward_backward and forward, protobuf both ways.
	data := []*tinkerpb.Datum{sdkDatum([]int32{1, 2, 3, 4, 5}, -1.5, 0.5), sdkDatum([]int32{5, 4, 3}, -0.75, -1)}
	st, fb := c.forwardBackward(model, 1, false, data...)
	ok("forward_backward submit", st == 200, fb)
	ctype, b := c.result(fb["request_id"], true)
	var out tinkerpb.ForwardBackwardOutput
	err := proto.Unmarshal(b, &out)
	ok("forward_backward result", ctype == "application/x-protobuf" && err == nil && len(out.GetLossFnOutputs()) == 1 &&
		out.GetLossFnOutputs()[0].GetNumDatums() == 2 && out.GetMetrics()["weighted_tokens:sum"] == 4, &out)
	if lp := out.GetLossFnOutputs()[0].GetFields()["logprobs"]; lp == nil || len(lp.GetOffsets()) != 3*8 || lp.GetDtype() != tinkerpb.DType_DTYPE_FLOAT32 {
		t.Errorf("logprobs BatchedTensor %v: want 3 int64 offsets of float32 data", lp)
	}
	st, fwd := c.forwardBackward(model, 2, true, data...)
	ok("forward (forward_only)", st == 200, fwd)
	c.result(fwd["request_id"], true)
	opt := c.jsonResult("optim_step", map[string]any{"adam_params": map[string]any{"learning_rate": 0.01, "beta1": 0.9, "beta2": 0.95, "eps": 1e-12, "weight_decay": 0, "grad_clip_norm": 0},
		"model_id": model, "seq_id": 3, "type": "optim_step"})
	metrics, _ := opt["metrics"].(map[string]any)
	ok("optim_step (forward_only trained nothing)", metrics["datums"] == 2.0, opt)

	// A replay is the original future; another body under the seq_id a
	// 409 the SDK is told not to retry.
	_, again := c.forwardBackward(model, 1, false, data...)
	ok("replay of seq_id 1", again["request_id"] == fb["request_id"], again)
	body, _ := proto.Marshal(&tinkerpb.ForwardBackwardRequest{ModelId: model, SeqId: 1, Data: data[:1], LossFn: "ppo"})
	st, h, _ := c.do(http.MethodPost, "forward_backward", "application/x-protobuf", "application/json", body)
	ok("another body under seq_id 1", st == 409 && h.Get("X-Should-Retry") == "false", st)

	saved := c.jsonResult("save_weights", map[string]any{"model_id": model, "path": "step-1", "seq_id": 4, "type": "save_weights"})
	statePath, _ := saved["path"].(string)
	ok("save_weights (save_state)", statePath == "tinker://"+model+"/weights/step-1", saved)
	sampler := c.jsonResult("save_weights_for_sampler", map[string]any{"model_id": model, "seq_id": 5, "type": "save_weights_for_sampler"})
	ok("save_weights_for_sampler without path", strings.HasPrefix(sampler["path"].(string), "tinker://"+model+"/sampler_weights/"), sampler)

	// A refused request spends its seq_id: the next one runs.
	bad := sdkDatum([]int32{1, 2, 3}, -1, 1)
	bad.LossFnInputs["target_tokens"].Encoding = &tinkerpb.Tensor_Dense{Dense: binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 9), 9)}
	_, refused := c.forwardBackward(model, 6, false, bad)
	_, rb := c.result(refused["request_id"], true)
	ok("refused forward_backward: a failed future, category user", bytes.Contains(rb, []byte(`"category":"user"`)), string(rb))
	next := c.jsonResult("optim_step", map[string]any{"adam_params": map[string]any{"learning_rate": 0.01}, "model_id": model, "seq_id": 7, "type": "optim_step"})
	ok("optim_step after a refused request", next["metrics"] != nil, next)

	st, wi := c.json(http.MethodPost, "weights_info", map[string]any{"tinker_path": statePath})
	ok("weights_info", st == 200 && wi["base_model"] == testModel && wi["lora_rank"] == 8.0, wi)
	st, runs := c.json(http.MethodGet, "training_runs?limit=5&offset=0", nil)
	list, _ := runs["training_runs"].([]any)
	ok("training_runs", st == 200 && len(list) == 1, runs)
	st, run := c.json(http.MethodGet, "training_runs/"+model, nil)
	ok("training_runs/ID", st == 200 && run["last_checkpoint"] != nil, run)
	for _, route := range []string{"training_runs/" + model + "/checkpoints", "models/" + model + "/checkpoints"} {
		st, cks := c.json(http.MethodGet, route, nil)
		l, _ := cks["checkpoints"].([]any)
		ok(route, st == 200 && len(l) == 2, cks)
	}

	// Resume the SDK's way: a fresh model, then load_state_with_optimizer.
	fresh := c.jsonResult("create_model", map[string]any{"session_id": sess["session_id"], "model_seq_id": 1, "base_model": testModel,
		"lora_config": map[string]any{"rank": 8}, "type": "create_model"})
	freshID, _ := fresh["model_id"].(string)
	loaded := c.jsonResult("load_weights", map[string]any{"model_id": freshID, "path": statePath, "optimizer": true, "seq_id": 1, "type": "load_weights"})
	ok("load_weights into a fresh model", loaded["path"] == statePath, loaded)

	// Older clients: JSON forward_backward, JSON result.
	jb := c.jsonResult("forward_backward", map[string]any{"model_id": freshID, "seq_id": 2, "forward_backward_input": map[string]any{
		"loss_fn": "importance_sampling", "data": []any{map[string]any{
			"model_input":    map[string]any{"chunks": []any{map[string]any{"type": "encoded_text", "tokens": []int{1, 2}}}},
			"loss_fn_inputs": map[string]any{"target_tokens": map[string]any{"data": []int{2, 3}, "dtype": "int64"}, "logprobs": map[string]any{"data": []float64{-1, -1}, "dtype": "float32"}, "advantages": map[string]any{"data": []float64{0, 1}, "dtype": "float32"}},
		}}}})
	ok("JSON forward_backward (older SDKs)", jb["loss_fn_output_type"] == "ArrayRecord", jb)

	// The SamplingClient: a sampling session on the saved sampler
	// weights, asample's future with one sequence id per sample, its
	// result read as protobuf (and as JSON, for older SDKs).
	st, ssn := c.json(http.MethodPost, "create_sampling_session", map[string]any{"session_id": sess["session_id"], "sampling_session_seq_id": 0, "model_path": sampler["path"], "type": "create_sampling_session"})
	ok("create_sampling_session", st == 200 && ssn["sampling_session_id"] != nil, ssn)
	sample := map[string]any{
		"sampling_session_id": ssn["sampling_session_id"], "seq_id": 0, "num_samples": 3,
		"prompt":          map[string]any{"chunks": []any{map[string]any{"type": "encoded_text", "tokens": []int{1, 2, 3}}}},
		"sampling_params": map[string]any{"max_tokens": 6, "seed": 7, "stop": nil, "temperature": 1, "top_k": -1, "top_p": 1},
		"prompt_logprobs": true, "topk_prompt_logprobs": 0, "type": "sample",
	}
	st, sf := c.json(http.MethodPost, "asample", sample)
	ids, _ := sf["sample_sequence_ids"].([]any)
	ok("asample", st == 200 && sf["request_id"] != nil && len(ids) == 3, sf)
	ctype, b = c.result(sf["request_id"], true)
	var sr tinkerpb.SampleResponse
	err = proto.Unmarshal(b, &sr)
	ok("asample result (protobuf)", ctype == "application/x-protobuf" && err == nil && len(sr.GetSequences()) == 3 &&
		len(sr.GetPromptLogprobs()) == 3*4 && math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(sr.GetPromptLogprobs())))), &sr)
	for _, sq := range sr.GetSequences() {
		ok("a sampled sequence", sq.GetStopReason() == tinkerpb.StopReason_STOP_REASON_LENGTH && len(sq.GetTokens()) == 6*4 && len(sq.GetLogprobs()) == 6*4, sq)
	}
	_, b = c.result(sf["request_id"], false)
	var js struct {
		Sequences []struct {
			Tokens     []int     `json:"tokens"`
			Logprobs   []float64 `json:"logprobs"`
			StopReason string    `json:"stop_reason"`
		} `json:"sequences"`
	}
	err = json.Unmarshal(b, &js)
	ok("asample result (JSON)", err == nil && len(js.Sequences) == 3 && js.Sequences[0].StopReason == "length" &&
		int32(js.Sequences[0].Tokens[0]) == int32(binary.LittleEndian.Uint32(sr.GetSequences()[0].GetTokens())), string(b))
}
