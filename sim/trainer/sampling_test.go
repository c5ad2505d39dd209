package trainer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"reflect"
	"slices"
	"testing"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// samplingServer serves the sim's own policy, whose planner prompt below
// makes stochastic decisions with parameters.
func samplingServer(t *testing.T) (*testServer, []int) {
	t.Helper()
	pol := NewSimPolicy(simllm.DefaultConfig(), nil)
	ts := newTestServer(t, Config{Policy: pol})
	tools := []policy.Tool{{Name: policy.ToolDelegate, Description: "Delegate a sub-task to an executor.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"task":{"type":"string"}},"required":["task"]}`)}}
	text, err := simllm.Template{}.Render([]simllm.Message{
		{Role: "system", Content: "You are a planner."},
		{Role: "user", Content: "What is the birth city of the founder of Velmora Labs?"},
	}, tools, true)
	if err != nil {
		t.Fatal(err)
	}
	return ts, pol.scorer.Tokenizer().Encode(text)
}

// sampleBody is the SDK's SampleRequest for a sampling session.
func sampleBody(session string, seq int, prompt []int, n int, params map[string]any) map[string]any {
	return map[string]any{
		"sampling_session_id": session, "seq_id": seq, "num_samples": n,
		"prompt":          map[string]any{"chunks": []any{map[string]any{"type": "encoded_text", "tokens": prompt}}},
		"sampling_params": params, "prompt_logprobs": true, "type": "sample",
	}
}

type gotSequence struct {
	Tokens     []int     `json:"tokens"`
	Logprobs   []float64 `json:"logprobs"`
	StopReason string    `json:"stop_reason"`
}

func sequencesOf(t *testing.T, res map[string]any) []gotSequence {
	t.Helper()
	b, _ := json.Marshal(res["sequences"])
	var out []gotSequence
	if err := json.Unmarshal(b, &out); err != nil || len(out) == 0 {
		t.Fatalf("sample result %v: no sequences (%v)", res, err)
	}
	return out
}

// newSamplingSession saves model's weights for the sampler (without a
// path, as save_weights_and_get_sampling_client does) and opens a
// sampling session on them.
func (ts *testServer) newSamplingSession(model string, seq int) string {
	ts.t.Helper()
	saved := ts.call("save_weights_for_sampler", map[string]any{"model_id": model, "seq_id": seq, "type": "save_weights_for_sampler"})
	sess := ts.mustPost("create_session", map[string]any{"type": "create_session"})
	created := ts.mustPost("create_sampling_session", map[string]any{
		"session_id": sess["session_id"], "sampling_session_seq_id": 0, "model_path": saved["path"], "type": "create_sampling_session",
	})
	id, _ := created["sampling_session_id"].(string)
	if id == "" {
		ts.t.Fatalf("create_sampling_session: %v", created)
	}
	return id
}

// TestSamplingRoutes is the SDK's SamplingClient against the sim trainer:
// create_sampling_session on saved sampler weights, asample futures with
// one sequence id per sample, samples whose logprobs are the trainer's
// own forward logprobs of the same tokens, seeded draws that repeat, a
// protobuf result, and a distribution that moves after optim_step.
func TestSamplingRoutes(t *testing.T) {
	ts, prompt := samplingServer(t)
	model := ts.newModel()
	info := ts.mustPost("get_info", map[string]any{"model_id": model, "type": "get_info"})
	if id := info["model_data"].(map[string]any)["tokenizer_id"]; id != simllm.TokenizerID {
		t.Errorf("get_info tokenizer_id = %v, want %s", id, simllm.TokenizerID)
	}
	session := ts.newSamplingSession(model, 1)
	params := map[string]any{"max_tokens": 512, "temperature": 1.0, "seed": 42, "top_k": -1, "top_p": 1.0}
	const n = 12

	fut := ts.mustPost("asample", sampleBody(session, 0, prompt, n, params))
	if ids, _ := fut["sample_sequence_ids"].([]any); len(ids) != n {
		t.Fatalf("asample answer %v: want %d sample_sequence_ids", fut, n)
	}
	res := ts.result(fut["request_id"])
	before := sequencesOf(t, res)
	distinct := map[string]bool{}
	for _, sq := range before {
		if sq.StopReason != "stop" || len(sq.Logprobs) != len(sq.Tokens) {
			t.Fatalf("sequence %+v: want stop_reason stop and a logprob per token", sq)
		}
		b, _ := json.Marshal(sq.Tokens)
		distinct[string(b)] = true
	}
	if len(distinct) < 2 {
		t.Fatalf("%d samples at temperature 1 drew %d distinct completions", n, len(distinct))
	}
	if pl, _ := res["prompt_logprobs"].([]any); len(pl) != len(prompt) || pl[0] != nil {
		t.Errorf("prompt_logprobs: %d entries (first %v), want %d with null first", len(pl), pl, len(prompt))
	}

	// A replay of the seq_id (a lost answer resent) is the same future;
	// the same seed under another seq_id draws the same samples.
	if again := ts.mustPost("asample", sampleBody(session, 0, prompt, n, params)); again["request_id"] != fut["request_id"] {
		t.Errorf("replayed seq_id answered %v, want the future %v", again["request_id"], fut["request_id"])
	}
	if st, m := ts.post("asample", sampleBody(session, 0, prompt, n+1, params)); st != http.StatusConflict {
		t.Errorf("seq_id reused with another body: %d %v, want 409", st, m)
	}
	if repeat := sequencesOf(t, ts.call("asample", sampleBody(session, 1, prompt, n, params))); !reflect.DeepEqual(repeat, before) {
		t.Errorf("seeded repeat differs:\n%+v\n%+v", repeat, before)
	}

	// The trainer's own forward logprobs of the sampled tokens.
	checkForward := func(seqID int, seqs []gotSequence) {
		t.Helper()
		var data []*tdatum
		for _, sq := range seqs {
			data = append(data, newDatum(append(slices.Clone(prompt), sq.Tokens...), len(prompt), 0, 0))
		}
		out := ts.call("forward", forwardBody(model, seqID, lossCrossEntropy, nil, data...))
		outs, _ := out["loss_fn_outputs"].([]any)
		for i, sq := range seqs {
			lps := outs[i].(map[string]any)["logprobs"].(map[string]any)["data"].([]any)
			for k, want := range sq.Logprobs {
				if got := lps[len(prompt)-1+k].(float64); math.Abs(got-want) > 1e-6 {
					t.Fatalf("sample %d token %d: sampled logprob %v, trainer's forward %v", i, k, want, got)
				}
			}
		}
	}
	checkForward(2, before)

	// The result as protobuf, for a poll that accepts it.
	raw := ts.retrieveRaw(fut["request_id"], protoContentType)
	if got := decodeSampleProto(t, raw); !reflect.DeepEqual(got, float32Sequences(before)) {
		t.Errorf("protobuf SampleResponse:\n%+v\nwant\n%+v", got, float32Sequences(before))
	}

	// Train toward the shortest completion, save, sample again: the same
	// seed now draws another distribution, still the trainer's.
	short := before[0]
	for _, sq := range before {
		if len(sq.Tokens) < len(short.Tokens) {
			short = sq
		}
	}
	var data []*tdatum
	for _, sq := range before {
		adv := -1.0
		if slices.Equal(sq.Tokens, short.Tokens) {
			adv = 1
		}
		data = append(data, newDatum(append(slices.Clone(prompt), sq.Tokens...), len(prompt), sq.Logprobs[0], adv))
	}
	ts.call("forward_backward", fwdBwd(model, 3, lossImportanceSampling, nil, data...))
	ts.call("optim_step", optim(model, 4, 0.5))
	trained := ts.newSamplingSession(model, 5)
	after := sequencesOf(t, ts.call("asample", sampleBody(trained, 0, prompt, n, params)))
	if reflect.DeepEqual(after, before) {
		t.Fatal("after optim_step the same seed drew the same samples with the same logprobs")
	}
	count := func(seqs []gotSequence) int {
		c := 0
		for _, sq := range seqs {
			if slices.Equal(sq.Tokens, short.Tokens) {
				c++
			}
		}
		return c
	}
	if count(after) <= count(before) {
		t.Errorf("the favoured completion: %d of %d samples before training toward it, %d after", count(before), n, count(after))
	}
	checkForward(6, after)

	// The old session still draws from the weights it was created on.
	if old := sequencesOf(t, ts.call("asample", sampleBody(session, 2, prompt, n, params))); !reflect.DeepEqual(old, before) {
		t.Error("a sampling session created before optim_step drew from other weights")
	}
}

// TestSamplingErrors: what the sampling routes refuse.
func TestSamplingErrors(t *testing.T) {
	ts, prompt := samplingServer(t)
	model := ts.newModel()
	session := ts.newSamplingSession(model, 1)
	sess := ts.mustPost("create_session", map[string]any{"type": "create_session"})
	for _, tc := range []struct {
		name  string
		route string
		body  map[string]any
		want  int
	}{
		{"unknown sampler path", "create_sampling_session", map[string]any{"session_id": sess["session_id"], "model_path": "tinker://" + model + "/sampler_weights/nope"}, http.StatusNotFound},
		{"bad path", "create_sampling_session", map[string]any{"session_id": sess["session_id"], "model_path": "s3://x"}, http.StatusBadRequest},
		{"unknown base", "create_sampling_session", map[string]any{"session_id": sess["session_id"], "base_model": "nope"}, http.StatusBadRequest},
		{"unknown session", "create_sampling_session", map[string]any{"session_id": "nope", "base_model": testBase}, http.StatusNotFound},
		{"unknown sampling session", "asample", sampleBody("nope", 0, prompt, 1, map[string]any{}), http.StatusNotFound},
	} {
		if st, m := ts.post(tc.route, tc.body); st != tc.want {
			t.Errorf("%s: %d %v, want %d", tc.name, st, m, tc.want)
		}
	}
	// Readable but wrong: the future fails (category user), its seq_id spent.
	for i, body := range []map[string]any{
		sampleBody(session, 0, prompt[:len(prompt)-2], 1, map[string]any{}),
		sampleBody(session, 1, prompt, 0, map[string]any{}),
		sampleBody(session, 2, prompt, 1, map[string]any{"temperature": -1}),
		func() map[string]any {
			b := sampleBody(session, 3, prompt, 1, map[string]any{})
			b["topk_prompt_logprobs"] = 5
			return b
		}(),
	} {
		if res := ts.call("asample", body); res["category"] != categoryUser {
			t.Errorf("case %d: result %v, want a failure of category user", i, res)
		}
	}

	// Stop strings and max_tokens cut; a base model samples its initial
	// weights, which the untrained model's save holds.
	greedy := map[string]any{"temperature": 0, "max_tokens": 5}
	cut := sequencesOf(t, ts.call("asample", sampleBody(session, 4, prompt, 1, greedy)))[0]
	if cut.StopReason != "length" || len(cut.Tokens) != 5 {
		t.Errorf("max_tokens 5: %+v", cut)
	}
	full := sequencesOf(t, ts.call("asample", sampleBody(session, 5, prompt, 1, map[string]any{"temperature": 0, "stop": "</think>"})))[0]
	text, _ := NewSimPolicy(simllm.DefaultConfig(), nil).Decode(full.Tokens)
	if full.StopReason != "stop" || !bytes.HasSuffix([]byte(text), []byte("</think>")) {
		t.Errorf("stop </think>: %q (%s)", text, full.StopReason)
	}
	if now := sequencesOf(t, ts.mustPost("sample", sampleBody(session, 6, prompt, 1, greedy))); !reflect.DeepEqual(now[0], cut) {
		t.Errorf("sample (answered at once) %+v, asample's %+v", now[0], cut)
	}
	base := ts.mustPost("create_sampling_session", map[string]any{"session_id": sess["session_id"], "base_model": testBase})
	fromBase := sequencesOf(t, ts.call("asample", sampleBody(base["sampling_session_id"].(string), 0, prompt, 1, greedy)))
	if !reflect.DeepEqual(fromBase[0], cut) {
		t.Errorf("base model greedy %+v, the untrained save's %+v", fromBase[0], cut)
	}

	// A policy that cannot sample says so.
	plain := newTestServer(t, Config{Policy: scoreOnly{Toy{Vocab: 4}}})
	if st, m := plain.post("create_sampling_session", map[string]any{"session_id": "x", "base_model": testBase}); st != http.StatusBadRequest {
		t.Errorf("a policy that is no Sampler: %d %v, want 400", st, m)
	}
}

// scoreOnly is a Policy that is not a Sampler.
type scoreOnly struct{ Policy }

// retrieveRaw polls a future once with accept and returns the body.
func (ts *testServer) retrieveRaw(id any, accept string) []byte {
	ts.t.Helper()
	b, _ := json.Marshal(map[string]any{"request_id": id})
	req, _ := http.NewRequest(http.MethodPost, ts.url+"/api/v1/retrieve_future", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept+", application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != accept {
		ts.t.Fatalf("retrieve_future: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	return body
}

// decodeSampleProto reads a SampleResponse's sequences with the sim's
// field splitter, as the documented layout has them.
func decodeSampleProto(t *testing.T, b []byte) []gotSequence {
	t.Helper()
	fs, err := fields(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []gotSequence
	for _, f := range fs {
		if f.num != 1 {
			continue
		}
		inner, err := fields(f.bytes)
		if err != nil {
			t.Fatal(err)
		}
		sq := gotSequence{StopReason: "stop"}
		for _, g := range inner {
			switch g.num {
			case 1:
				if g.bits == 1 {
					sq.StopReason = "length"
				}
			case 2:
				for i := 0; i+4 <= len(g.bytes); i += 4 {
					sq.Tokens = append(sq.Tokens, int(int32(binary.LittleEndian.Uint32(g.bytes[i:]))))
				}
			case 3:
				for i := 0; i+4 <= len(g.bytes); i += 4 {
					sq.Logprobs = append(sq.Logprobs, float64(math.Float32frombits(binary.LittleEndian.Uint32(g.bytes[i:]))))
				}
			}
		}
		out = append(out, sq)
	}
	return out
}

// float32Sequences is seqs with their logprobs rounded to float32, as the
// protobuf carries them.
func float32Sequences(seqs []gotSequence) []gotSequence {
	out := make([]gotSequence, len(seqs))
	for i, sq := range seqs {
		out[i] = gotSequence{Tokens: sq.Tokens, StopReason: sq.StopReason}
		for _, v := range sq.Logprobs {
			out[i].Logprobs = append(out[i].Logprobs, float64(float32(v)))
		}
	}
	return out
}
