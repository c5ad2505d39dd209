package httptrainer_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/httptrainer"
	"github.com/mgrpo/mgrpo/trainer_bridge/httptrainer/reference"
	"github.com/mgrpo/mgrpo/trainer_bridge/trainertest"
)

// startServer serves srv over HTTP for the test.
func startServer(t *testing.T, srv *reference.Server) string {
	t.Helper()
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts.URL + "/trainer"
}

// fastConfig is a Config for tests: short waits, so that retries and polls
// take milliseconds.
func fastConfig(url string, o trainerbridge.Options) httptrainer.Config {
	return httptrainer.Config{URL: url, Options: o, RetryMax: 4, RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond,
		PollWait: time.Second, PollInterval: time.Millisecond, StepTimeout: 30 * time.Second}
}

// mustStart returns a started Trainer for cfg, closed when t ends.
func mustStart(t *testing.T, cfg httptrainer.Config) *httptrainer.Trainer {
	t.Helper()
	tr, err := httptrainer.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { tr.Close() })
	if err := tr.Start(trainertest.Context(t)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return tr
}

func TestConformance(t *testing.T) {
	for _, polls := range []int{0, 2} {
		t.Run(map[int]string{0: "trained on submission", 2: "trained after polls"}[polls], func(t *testing.T) {
			base := startServer(t, reference.New(reference.Config{PollsBeforeDone: polls}))
			trainertest.Run(t, func(t *testing.T, run string, role rollout.Role) trainerbridge.Trainer {
				tr, err := httptrainer.New(fastConfig(base, trainerbridge.Options{Run: run, Role: role, BaseModel: "m"}))
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return tr
			})
		})
	}
}

func TestOpenByScheme(t *testing.T) {
	srv := reference.New(reference.Config{})
	base := startServer(t, srv)
	tr, err := trainerbridge.Open(trainertest.Context(t), base+"?poll_interval=1ms&retries=2&gzip=false", trainerbridge.Options{Run: "r", Role: rollout.RolePlanner})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer tr.Close()
	if err := tr.Start(trainertest.Context(t)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	plan, _ := trainertest.MustBatches(t, trainertest.BatchSpec{Run: "r", Step: 1, Seed: 1})
	if _, err := tr.Train(trainertest.Context(t), plan); err != nil {
		t.Fatalf("Train: %v", err)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(r.Path, "poll_interval") || r.ContentEncoding != "" {
			t.Errorf("request %+v: the URL's options leaked into the request, or gzip=false was ignored", r)
		}
	}
}

func TestTrainSendsTheBatchExactly(t *testing.T) {
	for _, noGzip := range []bool{false, true} {
		srv := reference.New(reference.Config{PollsBeforeDone: 1})
		cfg := fastConfig(startServer(t, srv), trainerbridge.Options{Run: "exact", Role: rollout.RoleExecutor})
		cfg.NoGzip = noGzip
		tr := mustStart(t, cfg)
		_, exec := trainertest.MustBatches(t, trainertest.BatchSpec{Run: "exact", Step: 2, PolicyVersion: 4, Queries: 5, Seed: 3})
		res, err := tr.Train(trainertest.Context(t), exec)
		if err != nil {
			t.Fatalf("Train: %v", err)
		}
		steps := srv.Steps()
		if len(steps) != 1 {
			t.Fatalf("%d steps trained, want 1", len(steps))
		}
		got := steps[0]
		if got.Gzip == noGzip {
			t.Errorf("gzip body %v with NoGzip %v", got.Gzip, noGzip)
		}
		if diff := cmp.Diff(exec.Samples, got.Samples); diff != "" {
			t.Errorf("samples the server expanded (-sent +received):\n%s", diff)
		}
		if got.Sequences >= len(exec.Samples) {
			t.Errorf("%d sequences for %d samples with duplicates: duplicates were sent again", got.Sequences, len(exec.Samples))
		}
		want := trainerbridge.StepResult{Weights: "reference://exact/executor/v5", Version: 5,
			Metrics: map[string]float64{"loss": 1.0 / 6, "samples": float64(len(exec.Samples)), "tokens": res.Metrics["tokens"]}}
		if diff := cmp.Diff(want, res); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	}
}

func TestLostAnswerTrainsOnce(t *testing.T) {
	srv := reference.New(reference.Config{PollsBeforeDone: 1})
	// The proxy times out after the service accepted the step, twice.
	srv.Inject(reference.Fault{Method: "POST", Path: "/v1/steps", Status: http.StatusGatewayTimeout, AfterHandling: true},
		reference.Fault{Method: "POST", Path: "/v1/steps", Status: http.StatusGatewayTimeout, AfterHandling: true})
	tr := mustStart(t, fastConfig(startServer(t, srv), trainerbridge.Options{Run: "lost", Role: rollout.RolePlanner}))
	plan, _ := trainertest.MustBatches(t, trainertest.BatchSpec{Run: "lost", Step: 1, Seed: 2})
	first, err := tr.Train(trainertest.Context(t), plan)
	if err != nil {
		t.Fatalf("Train: %v", err)
	}
	again, err := tr.Train(trainertest.Context(t), plan)
	if err != nil {
		t.Fatalf("second Train: %v", err)
	}
	if n := srv.Trains(plan.IdempotencyKey()); n != 1 {
		t.Errorf("the step was trained %d times, want 1", n)
	}
	if !cmp.Equal(first, again) {
		t.Errorf("second Train: %+v, want the first's %+v", again, first)
	}
}

func TestForgottenJobIsSubmittedAgain(t *testing.T) {
	srv := reference.New(reference.Config{PollsBeforeDone: 2})
	srv.Inject(reference.Fault{Method: "GET", Path: "/v1/steps", Status: http.StatusNotFound, Body: `{"error":{"code":"unknown_key","message":"restarted"}}`})
	tr := mustStart(t, fastConfig(startServer(t, srv), trainerbridge.Options{Run: "forgot", Role: rollout.RolePlanner}))
	plan, _ := trainertest.MustBatches(t, trainertest.BatchSpec{Run: "forgot", Step: 1, Seed: 2})
	if _, err := tr.Train(trainertest.Context(t), plan); err != nil {
		t.Fatalf("Train: %v", err)
	}
	posts := 0
	for _, r := range srv.Requests() {
		if r.Method == "POST" && r.Path == "/v1/steps" {
			posts++
		}
	}
	if posts != 2 || srv.Trains(plan.IdempotencyKey()) != 1 {
		t.Errorf("%d submissions and %d trainings, want 2 and 1", posts, srv.Trains(plan.IdempotencyKey()))
	}
}

func TestRetries(t *testing.T) {
	plan, _ := trainertest.MustBatches(t, trainertest.BatchSpec{Run: "retry", Step: 1, Seed: 4})
	tests := []struct {
		name     string
		faults   []reference.Fault
		wantErr  error
		wantText string
		minWait  time.Duration
		posts    int
	}{
		{name: "5xx then success", faults: []reference.Fault{{Path: "/v1/steps", Status: 500}, {Path: "/v1/steps", Status: 503}}, posts: 3},
		{name: "429 with Retry-After", faults: []reference.Fault{{Path: "/v1/steps", Status: 429, RetryAfter: "1"}}, minWait: 900 * time.Millisecond, posts: 2},
		{name: "4xx carries the trainer's message", faults: []reference.Fault{{Path: "/v1/steps", Status: 422, Body: `{"error":{"code":"bad_batch","message":"advantages are all zero"}}`}},
			wantErr: trainerbridge.ErrRejected, wantText: "advantages are all zero", posts: 1},
		{name: "4xx with a body of another shape", faults: []reference.Fault{{Path: "/v1/steps", Status: 400, Body: "plain text refusal"}},
			wantErr: trainerbridge.ErrRejected, wantText: "plain text refusal", posts: 1},
		{name: "5xx until the retries run out", faults: []reference.Fault{{Path: "/v1/steps", Status: 502}, {Path: "/v1/steps", Status: 502}, {Path: "/v1/steps", Status: 502}, {Path: "/v1/steps", Status: 502}, {Path: "/v1/steps", Status: 502, Body: `{"error":{"message":"upstream down"}}`}},
			wantErr: trainerbridge.ErrUnavailable, wantText: "upstream down", posts: 5},
		{name: "a failed job", faults: []reference.Fault{{Path: "/v1/steps", Status: 200, Body: `{"key":"retry/planner/step-000001","status":"failed","error":{"message":"CUDA out of memory"}}`}},
			wantErr: trainerbridge.ErrRejected, wantText: "CUDA out of memory", posts: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := reference.New(reference.Config{})
			srv.Inject(tc.faults...)
			tr := mustStart(t, fastConfig(startServer(t, srv), trainerbridge.Options{Run: "retry", Role: rollout.RolePlanner}))
			began := time.Now()
			_, err := tr.Train(trainertest.Context(t), plan)
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("Train: %v", err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("Train: %v, want %v", err, tc.wantErr)
			case tc.wantText != "" && !strings.Contains(err.Error(), tc.wantText):
				t.Errorf("Train: %v, want the trainer's message %q", err, tc.wantText)
			}
			if d := time.Since(began); d < tc.minWait {
				t.Errorf("Train returned after %v, before the Retry-After of %v", d, tc.minWait)
			}
			posts := 0
			for _, r := range srv.Requests() {
				if r.Method == "POST" && r.Path == "/v1/steps" {
					posts++
				}
			}
			if posts != tc.posts {
				t.Errorf("%d step submissions, want %d", posts, tc.posts)
			}
			if want := map[bool]int{true: 1, false: 0}[tc.wantErr == nil]; srv.Trains(plan.IdempotencyKey()) != want {
				t.Errorf("trained %d times, want %d", srv.Trains(plan.IdempotencyKey()), want)
			}
		})
	}
}

func TestKeyReusedForAnotherBatch(t *testing.T) {
	srv := reference.New(reference.Config{})
	tr := mustStart(t, fastConfig(startServer(t, srv), trainerbridge.Options{Run: "reuse", Role: rollout.RolePlanner}))
	plan, _ := trainertest.MustBatches(t, trainertest.BatchSpec{Run: "reuse", Step: 1, Seed: 5})
	if _, err := tr.Train(trainertest.Context(t), plan); err != nil {
		t.Fatalf("Train: %v", err)
	}
	plan.Samples = plan.Samples[1:]
	if _, err := tr.Train(trainertest.Context(t), plan); !errors.Is(err, trainerbridge.ErrRejected) || !strings.Contains(err.Error(), "409") {
		t.Errorf("Train of other samples under the same key: %v, want ErrRejected with the 409", err)
	}
}

func TestAuth(t *testing.T) {
	const key = "sk-test-0123456789"
	srv := reference.New(reference.Config{APIKey: key})
	base := startServer(t, srv)
	t.Setenv("TEST_TRAINER_KEY", key)
	u, _ := url.Parse(base)
	cfg, err := httptrainer.FromURL(u, trainerbridge.Options{Run: "auth", Role: rollout.RolePlanner, APIKeyEnv: "TEST_TRAINER_KEY"})
	if err != nil {
		t.Fatalf("FromURL: %v", err)
	}
	cfg.RetryWaitMin, cfg.PollInterval = time.Millisecond, time.Millisecond
	tr := mustStart(t, cfg)
	plan, _ := trainertest.MustBatches(t, trainertest.BatchSpec{Run: "auth", Step: 1, Seed: 6})
	if _, err := tr.Train(trainertest.Context(t), plan); err != nil {
		t.Fatalf("Train: %v", err)
	}
	for _, r := range srv.Requests() {
		if r.Authorization != "Bearer "+key {
			t.Errorf("%s %s: Authorization %q, want the bearer token", r.Method, r.Path, r.Authorization)
		}
	}

	t.Run("a wrong key is refused without showing it", func(t *testing.T) {
		const wrong = "sk-wrong-9876543210"
		srv.Inject(reference.Fault{Path: "/v1/start", Status: 401, Body: `{"error":{"message":"token sk-wrong-9876543210 is not valid"}}`})
		cfg := fastConfig(base, trainerbridge.Options{Run: "auth", Role: rollout.RolePlanner})
		cfg.APIKey = wrong
		tr, err := httptrainer.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		err = tr.Start(trainertest.Context(t))
		if !errors.Is(err, trainerbridge.ErrRejected) {
			t.Fatalf("Start with a wrong key: %v, want ErrRejected", err)
		}
		if strings.Contains(err.Error(), wrong) {
			t.Errorf("the error shows the key: %v", err)
		}
	})
	t.Run("a named variable that is empty", func(t *testing.T) {
		t.Setenv("TEST_TRAINER_KEY", "")
		if _, err := httptrainer.FromURL(u, trainerbridge.Options{APIKeyEnv: "TEST_TRAINER_KEY"}); err == nil || !strings.Contains(err.Error(), "TEST_TRAINER_KEY") {
			t.Errorf("FromURL with an empty key variable: %v, want an error naming it", err)
		}
	})
}

func TestUnknownModelAtStart(t *testing.T) {
	srv := reference.New(reference.Config{BaseModels: []string{"Qwen/Qwen3-8B"}})
	tr, err := httptrainer.New(fastConfig(startServer(t, srv), trainerbridge.Options{Run: "m", Role: rollout.RolePlanner, BaseModel: "Qwen/Qwen3-4B"}))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	err = tr.Start(trainertest.Context(t))
	if !errors.Is(err, trainerbridge.ErrUnknownModel) || !strings.Contains(err.Error(), "Qwen/Qwen3-8B") {
		t.Errorf("Start: %v, want ErrUnknownModel listing the served models", err)
	}
}

func TestStepTimeout(t *testing.T) {
	srv := reference.New(reference.Config{PollsBeforeDone: 1 << 30})
	cfg := fastConfig(startServer(t, srv), trainerbridge.Options{Run: "slow", Role: rollout.RolePlanner})
	cfg.StepTimeout, cfg.PollInterval = 100*time.Millisecond, 10*time.Millisecond
	tr := mustStart(t, cfg)
	plan, _ := trainertest.MustBatches(t, trainertest.BatchSpec{Run: "slow", Step: 1, Seed: 7})
	_, err := tr.Train(trainertest.Context(t), plan)
	if !errors.Is(err, trainerbridge.ErrUnavailable) || !strings.Contains(err.Error(), "step_timeout") {
		t.Errorf("Train of a step that never finishes: %v, want ErrUnavailable naming step_timeout", err)
	}
}

func TestTrainBeforeStart(t *testing.T) {
	tr, err := httptrainer.New(fastConfig("http://127.0.0.1:1", trainerbridge.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := trainertest.MustBatches(t, trainertest.BatchSpec{Seed: 8})
	if _, err := tr.Train(trainertest.Context(t), plan); err == nil {
		t.Error("Train before Start succeeded")
	}
}
