package farm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// TestPinnedSchedule checks the versions a pinned run schedules step t at
// (those step t−1−S trained to, whatever trained since), the pins its
// rollouts' calls carry by client role, and that Validate refuses a pin
// where rollouts are restarted, streamed or run elsewhere.
func TestPinnedSchedule(t *testing.T) {
	runner := runnerFunc(func(context.Context, rollout.RolloutTask, Task) *agents.Rollout { return nil })
	cfg := testFarmConfig(t.TempDir(), runner)
	trainers := map[rollout.Role]trainerbridge.Trainer{rollout.RolePlanner: &slowTrainer{}, rollout.RoleExecutor: &slowTrainer{}}
	cfg.Training = &Training{Trainers: trainers, MaxStaleness: 2, PinVersions: true}
	f, err := New(cfg, testTasks(cfg.BatchSize))
	if err != nil {
		t.Fatal(err)
	}
	f.train.mu.Lock()
	for step, v := range map[int]int64{1: 10, 2: 20, 3: 30} {
		f.train.recordTrainedLocked(step, rollout.RolePlanner, v)
		f.train.recordTrainedLocked(step, rollout.RoleExecutor, v+1)
	}
	f.train.versions[rollout.RolePlanner], f.train.versions[rollout.RoleExecutor] = 30, 31
	f.train.mu.Unlock()
	for step, want := range map[int][2]int64{1: {0, 0}, 3: {0, 0}, 4: {10, 11}, 5: {20, 21}, 7: {30, 31}} {
		if p, e := f.scheduledVersions(step); p != want[0] || e != want[1] {
			t.Errorf("step %d scheduled at %d/%d, want %d/%d", step, p, e, want[0], want[1])
		}
	}

	// The calls of a rollout of task carry the pins of both trained
	// roles, each on its own client.
	ctx := f.pinned(context.Background(), rollout.RolloutTask{PolicyVersion: 4, ExecutorPolicyVersion: 5})
	for role, want := range map[string]string{"planner": "4", "executor": "5"} {
		sent := make(chan string, 4)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sent <- r.Header.Get(llm.WeightVersionPinHeader)
			http.Error(w, "refused", http.StatusBadRequest)
		}))
		cl, err := llm.New(llm.Config{Role: role, Dialect: llm.DialectVLLM, Model: "m", Endpoints: []string{srv.URL},
			Retry: llm.RetryPolicy{MaxAttempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = cl.Chat(ctx, llm.Request{Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}})
		cl.Close()
		srv.Close()
		if got := <-sent; got != want {
			t.Errorf("the %s client sent pin %q, want %q", role, got, want)
		}
	}
}

func TestPinVersionsValidate(t *testing.T) {
	runner := runnerFunc(func(context.Context, rollout.RolloutTask, Task) *agents.Rollout { return nil })
	for name, mutate := range map[string]func(*Config){
		"restart":  func(c *Config) { c.Training.PartialRollouts = PartialRestart },
		"streamed": func(c *Config) { c.Training.StreamGroups = true },
		"peers":    func(c *Config) { c.Training.Peers = []rollout.Role{rollout.RoleExecutor} },
	} {
		cfg := testFarmConfig(t.TempDir(), runner)
		cfg.Training = &Training{MaxStaleness: 1, PinVersions: true}
		mutate(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "Training.PinVersions") {
			t.Errorf("%s: Validate() = %v, want it to refuse Training.PinVersions", name, err)
		}
	}
}
