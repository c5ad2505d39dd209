package tinker_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	simtrainer "github.com/mgrpo/mgrpo/sim/trainer"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/tinker"
	"github.com/mgrpo/mgrpo/trainer_bridge/trainertest"
)

// wrappedSim serves the sim trainer through wrap, which may answer a
// request itself (true) or leave it to the sim (false).
func wrappedSim(t *testing.T, wrap func(w http.ResponseWriter, r *http.Request) bool) string {
	t.Helper()
	s := simtrainer.New(simtrainer.Config{Policy: simtrainer.Toy{Vocab: 16}, BaseModels: []string{testModel}, CheckpointDir: t.TempDir(), APIKey: testKey})
	h := s.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !wrap(w, r) {
			h.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(func() {
		hs.Close()
		s.Close()
	})
	return hs.URL
}

func simOptions() trainerbridge.Options {
	return trainerbridge.Options{Run: "cfg", Role: rollout.RoleExecutor, BaseModel: testModel, APIKeyEnv: "MGRPO_TEST_TINKER_KEY", Adam: trainerbridge.AdamParams{LearningRate: 0.01}}
}

func execBatch(t *testing.T, step int) trainerbridge.Batch {
	_, exec := trainertest.MustBatches(t, trainertest.BatchSpec{Run: "cfg", Step: step, PolicyVersion: int64(step - 1), Seed: uint64(step)})
	return exec
}

// TestFollowsClientConfig: the server's chunk limit splits the step, and
// a flag the bridge does not know is logged once.
func TestFollowsClientConfig(t *testing.T) {
	url := wrappedSim(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/api/v1/client/config" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"fwdbwd_max_chunk_len": 3, "fwdbwd_max_chunk_bytes_count": 5000000, "brand_new_flag": true}`)
		return true
	})
	var logs bytes.Buffer
	cfg := fastConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	tr := mustTrainer(t, url, simOptions(), cfg, nil)
	defer tr.Close()
	ctx := trainertest.Context(t)
	b := execBatch(t, 1)
	res, err := tr.Train(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	datums := res.Metrics[tinker.MetricDatums]
	if want := float64((int(datums) + 2) / 3); res.Metrics[tinker.MetricRequests] != want || datums < 4 {
		t.Errorf("%v datums in %v requests: want %v requests of at most 3", datums, res.Metrics[tinker.MetricRequests], want)
	}
	if _, err := tr.Train(ctx, execBatch(t, 2)); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "brand_new_flag"); n != 1 {
		t.Errorf("unknown flag logged %d times, want once:\n%s", n, logs.String())
	}
}

// TestProtobufRefusedFallsBackToJSON: a server that answers client/config
// but refuses protobuf bodies (415) is sent JSON from then on.
func TestProtobufRefusedFallsBackToJSON(t *testing.T) {
	var mu sync.Mutex
	proto, plain := 0, 0
	url := wrappedSim(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/api/v1/forward_backward" {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-protobuf") {
			proto++
			w.WriteHeader(http.StatusUnsupportedMediaType)
			io.WriteString(w, `{"detail":"protobuf not served"}`)
			return true
		}
		plain++
		return false
	})
	tr := mustTrainer(t, url, simOptions(), fastConfig(), nil)
	defer tr.Close()
	ctx := trainertest.Context(t)
	for step := 1; step <= 2; step++ {
		if _, err := tr.Train(ctx, execBatch(t, step)); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if proto != 1 || plain < 2 {
		t.Errorf("%d protobuf and %d JSON forward_backward requests: want one protobuf try, then JSON", proto, plain)
	}
}

// TestConflictRetried: a 409 is retried as the SDK's HTTP layer retries
// it (a lock timeout, for it), and the step trains once.
func TestConflictRetried(t *testing.T) {
	f, srv := newFake(testKey, testModel)
	defer srv.Close()
	tr := mustTrainer(t, srv.URL, testOptions(), fastConfig(), nil)
	f.script("optim_step", 409)
	if _, err := tr.Train(trainertest.Context(t), batch(1, stepSamples(1)...)); err != nil {
		t.Fatalf("Train after a 409: %v", err)
	}
	if m := f.model("model_1"); m.optims != 1 {
		t.Errorf("%d optimizer steps, want 1", m.optims)
	}
	f.check(t)
}
