package tinker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/tinker"
)

const (
	testKey   = "tk-test-secret-0123456789"
	testModel = "Qwen/Qwen3-8B"
)

func testOptions() trainerbridge.Options {
	return trainerbridge.Options{
		Run: "run1", Role: rollout.RolePlanner, BaseModel: testModel, LoRARank: 16, Seed: 7,
		APIKeyEnv: "MGRPO_TEST_TINKER_KEY",
	}
}

func fastConfig() tinker.Config {
	return tinker.Config{
		HeartbeatInterval: time.Hour,
		Backoff:           func(time.Duration, time.Duration, int, *http.Response) time.Duration { return time.Millisecond },
		MaxRetries:        3,
	}
}

// mustTrainer returns a started trainer against f's server.
func mustTrainer(t *testing.T, url string, o trainerbridge.Options, cfg tinker.Config, state []byte) *tinker.Trainer {
	t.Helper()
	t.Setenv(o.APIKeyEnv, testKey)
	tr, err := tinker.New("tinker+"+url, o, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if state != nil {
		if err := tr.Resume(state); err != nil {
			t.Fatalf("Resume: %v", err)
		}
	}
	if err := tr.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// sample returns a sample of n tokens: a prompt of half, then generated
// tokens with logprobs -0.5, -0.25, ….
func sample(n int, adv float64, seed int) rollout.Sample {
	s := rollout.Sample{Run: "run1", Role: rollout.RolePlanner, Advantage: adv,
		InputIDs: make([]int, n), LossMask: make([]int8, n), Logprobs: make([]float64, n)}
	for i := 0; i < n; i++ {
		s.InputIDs[i] = 1000 + seed*7 + i
		if i >= n/2 {
			s.LossMask[i] = 1
			s.Logprobs[i] = -1 / float64(2+i%4)
		}
	}
	return s
}

func batch(step int, samples ...rollout.Sample) trainerbridge.Batch {
	return trainerbridge.Batch{Run: "run1", Role: rollout.RolePlanner, Step: step, PolicyVersion: int64(step - 1), Samples: samples}
}

func decode(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func want(t *testing.T, js string) map[string]any { return decode(t, []byte(js)) }

func TestStartWire(t *testing.T) {
	f, srv := newFake(testKey, "other/model", testModel)
	defer srv.Close()
	tr := mustTrainer(t, srv.URL, testOptions(), fastConfig(), nil)

	sess := f.callsTo("create_session")
	if len(sess) != 1 {
		t.Fatalf("%d create_session calls, want 1", len(sess))
	}
	if v, _ := sess[0].body["sdk_version"].(string); !strings.HasPrefix(v, "mgrpo/") {
		t.Errorf("sdk_version %q: want mgrpo's own version, mgrpo/…", v)
	}
	delete(sess[0].body, "sdk_version")
	if diff := cmp.Diff(want(t, `{"tags":["mgrpo","planner"],"user_metadata":{"client":"mgrpo","run":"run1","role":"planner"},
		"type":"create_session"}`), sess[0].body); diff != "" {
		t.Errorf("create_session body (-want +got):\n%s", diff)
	}
	cm := f.callsTo("create_model")
	if len(cm) != 1 {
		t.Fatalf("%d create_model calls, want 1", len(cm))
	}
	if diff := cmp.Diff(want(t, `{"session_id":"session_1","model_seq_id":0,"base_model":"Qwen/Qwen3-8B",
		"user_metadata":{"client":"mgrpo","run":"run1","role":"planner"},
		"lora_config":{"rank":16,"seed":7,"train_unembed":true,"train_mlp":true,"train_attn":true},"type":"create_model"}`), cm[0].body); diff != "" {
		t.Errorf("create_model body (-want +got):\n%s", diff)
	}
	if got := f.callsTo("retrieve_future"); len(got) != 1 || string(got[0].raw) != `{"request_id":"1"}` {
		t.Errorf("retrieve_future calls %v, want one with body {\"request_id\":\"1\"}", got)
	}
	st := tr.State()
	if st.ModelID != "model_1" || st.SessionID != "session_1" || st.SeqID != 0 {
		t.Errorf("state %+v, want model_1, session_1, seq 0", st)
	}
	for _, c := range f.calls {
		if c.key != testKey {
			t.Errorf("%s sent X-API-Key %q", c.route, c.key)
		}
	}
	f.check(t)
}

func TestUnknownBaseModel(t *testing.T) {
	f, srv := newFake(testKey, "other/model")
	defer srv.Close()
	o := testOptions()
	t.Setenv(o.APIKeyEnv, testKey)
	tr, err := tinker.New("tinker+"+srv.URL, o, fastConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	err = tr.Start(context.Background())
	if !errors.Is(err, trainerbridge.ErrUnknownModel) || !strings.Contains(err.Error(), "other/model") {
		t.Fatalf("Start = %v, want ErrUnknownModel naming the served models", err)
	}
	if n := len(f.callsTo("create_session")); n != 0 {
		t.Errorf("%d sessions created for an unknown model", n)
	}
}

func TestTrainWire(t *testing.T) {
	f, srv := newFake(testKey, testModel)
	defer srv.Close()
	o := testOptions()
	o.Loss, o.ClipLow, o.ClipHigh = trainerbridge.LossPPO, 0.2, 0.28
	o.Adam = trainerbridge.AdamParams{LearningRate: 3e-6, WeightDecay: 0.01, GradClipNorm: 1}
	tr := mustTrainer(t, srv.URL, o, fastConfig(), nil)

	pad := rollout.Sample{InputIDs: []int{0}, LossMask: []int8{0}, Logprobs: []float64{0}, FinishReason: "padding"}
	s := rollout.Sample{InputIDs: []int{5, 6, 7, 8}, LossMask: []int8{0, 1, 0, 1}, Logprobs: []float64{0, -0.5, 0, -0.125}, Advantage: 1.5}
	res, err := tr.Train(context.Background(), batch(3, s, pad))
	if err != nil {
		t.Fatalf("Train: %v", err)
	}
	fb := f.callsTo("forward_backward")
	if len(fb) != 1 {
		t.Fatalf("%d forward_backward calls, want 1", len(fb))
	}
	if diff := cmp.Diff(want(t, `{"forward_backward_input":{"data":[{
		"model_input":{"chunks":[{"type":"encoded_text","tokens":[5,6,7]}]},
		"loss_fn_inputs":{
			"target_tokens":{"data":[6,7,8],"dtype":"int64","shape":[3]},
			"weights":{"data":[1,0,1],"dtype":"float32","shape":[3]},
			"logprobs":{"data":[-0.5,0,-0.125],"dtype":"float32","shape":[3]},
			"advantages":{"data":[1.5,0,1.5],"dtype":"float32","shape":[3]}}}],
		"loss_fn":"ppo","loss_fn_config":{"clip_high_threshold":1.28,"clip_low_threshold":0.8}},
		"model_id":"model_1","seq_id":1}`), fb[0].body); diff != "" {
		t.Errorf("forward_backward body (-want +got):\n%s", diff)
	}
	opt := f.callsTo("optim_step")
	if len(opt) != 1 {
		t.Fatalf("%d optim_step calls, want 1", len(opt))
	}
	if diff := cmp.Diff(want(t, `{"adam_params":{"learning_rate":3e-6,"beta1":0.9,"beta2":0.95,"eps":1e-12,"weight_decay":0.01,"grad_clip_norm":1},
		"model_id":"model_1","seq_id":2,"type":"optim_step"}`), opt[0].body); diff != "" {
		t.Errorf("optim_step body (-want +got):\n%s", diff)
	}
	save := f.callsTo("save_weights_for_sampler")
	if len(save) != 1 {
		t.Fatalf("%d save calls, want 1", len(save))
	}
	if diff := cmp.Diff(want(t, `{"model_id":"model_1","path":"run1_planner_step-000003","seq_id":3,"type":"save_weights_for_sampler"}`), save[0].body); diff != "" {
		t.Errorf("save_weights_for_sampler body (-want +got):\n%s", diff)
	}
	if res.Weights != "tinker://model_1/sampler_weights/run1_planner_step-000003" || res.Version != 3 {
		t.Errorf("result %q version %d, want the tinker path and version 3", res.Weights, res.Version)
	}
	wantMetrics := map[string]float64{
		"loss:sum": 1, "clip_fraction:mean": 0.001, "entropy:max": 1, "grad_norm:mean": 1.5,
		tinker.MetricDatums: 1, tinker.MetricTokens: 3, tinker.MetricRequests: 1,
		tinker.MetricSkippedShort: 1, tinker.MetricSkippedNoLoss: 0,
	}
	if diff := cmp.Diff(wantMetrics, res.Metrics); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	if st := tr.State(); st.SeqID != 3 || st.LastStep != 3 || st.StepsTrained != 1 || st.Weights != res.Weights {
		t.Errorf("state %+v after the step", st)
	}
	f.check(t)
}

func TestImportanceSamplingSendsNoConfig(t *testing.T) {
	f, srv := newFake(testKey, testModel)
	defer srv.Close()
	tr := mustTrainer(t, srv.URL, testOptions(), fastConfig(), nil)
	if _, err := tr.Train(context.Background(), batch(1, sample(6, 1, 0))); err != nil {
		t.Fatal(err)
	}
	in := f.callsTo("forward_backward")[0].body["forward_backward_input"].(map[string]any)
	if in["loss_fn"] != "importance_sampling" {
		t.Errorf("loss_fn %v", in["loss_fn"])
	}
	if _, has := in["loss_fn_config"]; has {
		t.Errorf("loss_fn_config sent with importance_sampling: %v (SkyRL refuses any key)", in["loss_fn_config"])
	}
}

// datumCounts returns the number of datums of each forward_backward call.
func datumCounts(f *fakeTinker) (counts []int, seqs []float64, sizes []int) {
	for _, c := range f.callsTo("forward_backward") {
		in := c.body["forward_backward_input"].(map[string]any)
		counts = append(counts, len(in["data"].([]any)))
		seqs = append(seqs, c.body["seq_id"].(float64))
		sizes = append(sizes, len(c.raw))
	}
	return counts, seqs, sizes
}

func TestChunkingByDatums(t *testing.T) {
	f, srv := newFake(testKey, testModel)
	defer srv.Close()
	tr := mustTrainer(t, srv.URL, testOptions(), fastConfig(), nil)
	var ss []rollout.Sample
	for i := 0; i < 2500; i++ {
		ss = append(ss, sample(4, 1, i))
	}
	res, err := tr.Train(context.Background(), batch(1, ss...))
	if err != nil {
		t.Fatal(err)
	}
	counts, seqs, _ := datumCounts(f)
	if diff := cmp.Diff([]int{1024, 1024, 452}, counts); diff != "" {
		t.Errorf("datums per request (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{1, 2, 3}, seqs); diff != "" {
		t.Errorf("seq_ids (-want +got):\n%s", diff)
	}
	if got := f.callsTo("optim_step")[0].body["seq_id"]; got != 4.0 {
		t.Errorf("optim_step seq_id %v, want 4", got)
	}
	if got := res.Metrics["loss:sum"]; got != 2500 {
		t.Errorf("loss:sum %v, want the sum over the requests, 2500", got)
	}
	if got := res.Metrics["clip_fraction:mean"]; fmt.Sprintf("%.6f", got) != fmt.Sprintf("%.6f", (1024*1.024+1024*1.024+452*0.452)/2500) {
		t.Errorf("clip_fraction:mean %v, want the datum-weighted mean", got)
	}
	if got := res.Metrics["entropy:max"]; got != 3 {
		t.Errorf("entropy:max %v, want 3", got)
	}
	// Datum 1024 of the first request is the first of the second.
	second := f.callsTo("forward_backward")[1].body["forward_backward_input"].(map[string]any)["data"].([]any)[0]
	tokens := second.(map[string]any)["model_input"].(map[string]any)["chunks"].([]any)[0].(map[string]any)["tokens"].([]any)
	if tokens[0] != float64(1000+1024*7) {
		t.Errorf("second request starts with token %v, want sample 1024's", tokens[0])
	}
	f.check(t)
}

func TestChunkingByBytes(t *testing.T) {
	f, srv := newFake(testKey, testModel)
	defer srv.Close()
	tr := mustTrainer(t, srv.URL, testOptions(), fastConfig(), nil)
	var ss []rollout.Sample
	for i := 0; i < 12; i++ {
		ss = append(ss, sample(40_000, 0.75, i))
	}
	if _, err := tr.Train(context.Background(), batch(1, ss...)); err != nil {
		t.Fatal(err)
	}
	counts, _, sizes := datumCounts(f)
	if len(counts) < 3 {
		t.Fatalf("datums per request %v: want the batch split by size", counts)
	}
	total := 0
	for k, n := range counts {
		total += n
		if sizes[k] > 5_000_000 {
			t.Errorf("request %d is %d bytes, over 5,000,000", k, sizes[k])
		}
		// Every request but the last is full: one more datum (about
		// 1.1 MB here) would not fit.
		if k < len(counts)-1 && sizes[k]+sizes[k]/n <= 5_000_000 {
			t.Errorf("request %d is %d bytes of %d datums: another would have fit", k, sizes[k], n)
		}
	}
	if total != 12 {
		t.Errorf("%d datums sent, want 12", total)
	}
	f.check(t)
}

func TestOversizedDatumGoesAlone(t *testing.T) {
	f, srv := newFake(testKey, testModel)
	defer srv.Close()
	cfg := fastConfig()
	cfg.MaxBytes = 300
	tr := mustTrainer(t, srv.URL, testOptions(), cfg, nil)
	if _, err := tr.Train(context.Background(), batch(1, sample(40, 1, 0), sample(40, 1, 1), sample(4, 1, 2))); err != nil {
		t.Fatal(err)
	}
	counts, _, _ := datumCounts(f)
	if diff := cmp.Diff([]int{1, 1, 1}, counts); diff != "" {
		t.Errorf("datums per request (-want +got):\n%s", diff)
	}
}

func TestFutures(t *testing.T) {
	tests := []struct {
		name    string
		submit  map[string][]int
		polls   []string
		wantErr error
		errText []string
	}{
		{name: "try_again three times", polls: []string{"try_again", "try_again", "try_again"}},
		{name: "408 polls again", polls: []string{"408", "408"}},
		{name: "410 submits again", polls: []string{"410"}},
		{name: "5xx while polling backs off", polls: []string{"503", "503"}},
		{name: "429 on submit backs off", submit: map[string][]int{"forward_backward": {429, 429}}},
		{name: "5xx on submit retries", submit: map[string][]int{"optim_step": {502, 503}}},
		{name: "bare 400 on submit retries", submit: map[string][]int{"forward_backward": {400}}},
		{name: "error with category", polls: []string{"error200"}, wantErr: trainerbridge.ErrRejected,
			errText: []string{"target token 99 out of vocabulary", "category user", "forward_backward"}},
		{name: "4xx with detail", polls: []string{"detail400"}, wantErr: trainerbridge.ErrRejected,
			errText: []string{"Datum 3 has mismatched lengths", "HTTP 400"}},
		{name: "5xx past the retries", submit: map[string][]int{"forward_backward": {500, 500, 500, 500, 500}}, wantErr: trainerbridge.ErrUnavailable,
			errText: []string{"scripted 500", "after 4 attempts"}},
		{name: "4xx on submit", submit: map[string][]int{"save_weights_for_sampler": {422}}, wantErr: trainerbridge.ErrRejected,
			errText: []string{"save_weights_for_sampler", "HTTP 422", "scripted 422"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := newFake(testKey, testModel)
			defer srv.Close()
			tr := mustTrainer(t, srv.URL, testOptions(), fastConfig(), nil)
			for route, sts := range tc.submit {
				f.script(route, sts...)
			}
			f.scriptPolls(tc.polls...)
			res, err := tr.Train(context.Background(), batch(1, sample(8, 1, 0), sample(6, -1, 1)))
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Train: %v", err)
				}
				if res.Weights == "" || res.Metrics["loss:sum"] != 2 {
					t.Errorf("result %+v", res)
				}
				if m := f.model("model_1"); m.datums != 2 || m.optims != 1 || m.saves != 1 {
					t.Errorf("server ran %d datums, %d optimizer steps, %d saves; want 2, 1, 1", m.datums, m.optims, m.saves)
				}
			} else {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Train = %v, want %v", err, tc.wantErr)
				}
				for _, s := range tc.errText {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				if st := tr.State(); st.SeqID != 0 || st.StepsTrained != 0 {
					t.Errorf("state moved on a failed step: %+v", st)
				}
			}
			f.check(t)
		})
	}
}

func TestResubmitSendsTheSameBody(t *testing.T) {
	f, srv := newFake(testKey, testModel)
	defer srv.Close()
	tr := mustTrainer(t, srv.URL, testOptions(), fastConfig(), nil)
	f.scriptPolls("410")
	if _, err := tr.Train(context.Background(), batch(1, sample(8, 1, 0))); err != nil {
		t.Fatal(err)
	}
	fb := f.callsTo("forward_backward")
	if len(fb) != 2 || string(fb[0].raw) != string(fb[1].raw) {
		t.Fatalf("%d forward_backward calls; want the first sent twice, byte for byte", len(fb))
	}
	if m := f.model("model_1"); m.datums != 1 {
		t.Errorf("server trained %d datums, want 1", m.datums)
	}
}

func TestRejectedChunkNeverReachesTheOptimizer(t *testing.T) {
	f, srv := newFake(testKey, testModel)
	defer srv.Close()
	cfg := fastConfig()
	cfg.MaxDatums = 1
	tr := mustTrainer(t, srv.URL, testOptions(), cfg, nil)
	// Futures: 1 create_model, 2 and 3 the two forward_backward requests.
	f.scriptPollsFor("3", "error200")
	_, err := tr.Train(context.Background(), batch(1, sample(6, 1, 0), sample(6, 1, 1)))
	if !errors.Is(err, trainerbridge.ErrRejected) || !strings.Contains(err.Error(), "forward_backward 2 of 2 (seq_id 2)") {
		t.Fatalf("Train = %v, want ErrRejected naming request 2", err)
	}
	if n := len(f.callsTo("optim_step")); n != 0 {
		t.Errorf("optim_step sent %d times after a rejected forward_backward", n)
	}
	f.check(t)
}
