package run

import (
	"errors"
	"strings"
	"testing"
)

// trainingConfig is a configuration CheckTraining accepts: mode mgrpo,
// both trainers, no weight sync, on-policy sampling against vLLM.
func trainingConfig() Config {
	c := DefaultConfig()
	c.Train.PlannerTrainer, c.Train.ExecutorTrainer = "file:///tmp/p", "file:///tmp/e"
	c.Train.BaseModelPlanner, c.Train.BaseModelExecutor = "Qwen/Qwen3-8B", "Qwen/Qwen3-8B"
	c.Train.WeightSync = "none"
	return c
}

func TestDefaultSamplingIsOnPolicy(t *testing.T) {
	c := DefaultConfig()
	for _, e := range []EndpointConfig{c.Planner, c.Executor} {
		if off := e.Sampling().OffPolicy(); len(off) > 0 {
			t.Errorf("default sampling is off-policy: %v", off)
		}
	}
	if c.Judge.Temperature != nil || c.Reasoner.TopP != nil {
		t.Errorf("a judge's or reasoner's sampling defaults to the server's, not set")
	}
	// A fresh value each call: no configuration shares another's settings.
	d := DefaultConfig()
	if c.Planner.Temperature == d.Planner.Temperature || c.Planner.Temperature == c.Executor.Temperature {
		t.Errorf("DefaultConfig shares sampling pointers")
	}
}

func TestCheckTrainingRefusesOffPolicySampling(t *testing.T) {
	temp := func(v float64) *float64 { return &v }
	topK := 20
	for _, tc := range []struct {
		name   string
		edit   func(*Config)
		refuse string // a part of the error, "" for none
	}{
		{"on-policy vllm", func(*Config) {}, ""},
		{"vllm temperature", func(c *Config) { c.Planner.Temperature = temp(0.6) },
			"--logprobs-mode processed_logprobs"},
		{"vllm top_k", func(c *Config) { c.Executor.TopK = &topK }, "executor.logprobs_mode: processed"},
		{"vllm unset", func(c *Config) { c.Planner.TopP = nil }, "top_p unset"},
		{"vllm processed", func(c *Config) {
			c.Planner.Temperature, c.Planner.LogprobsMode = temp(0.6), LogprobsProcessed
		}, ""},
		{"frozen-sub ignores the executor", func(c *Config) {
			c.Mode, c.Train.ExecutorTrainer, c.Executor.Temperature = "frozen-sub", "", temp(0.6)
		}, ""},
		{"single trains the executor", func(c *Config) {
			c.Mode, c.Train.ExecutorTrainer, c.Executor.Temperature = "single", "", temp(0.6)
		}, "executor"},
		{"sglang temperature", func(c *Config) { c.Planner.Dialect, c.Planner.Temperature = "sglang", temp(0.6) }, ""},
		{"sglang top_k", func(c *Config) { c.Planner.Dialect, c.Planner.TopK = "sglang", &topK }, "before top-k/top-p/min-p"},
		{"bad mode", func(c *Config) { c.Planner.LogprobsMode = "cooked" }, `"cooked": want raw or processed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := trainingConfig()
			tc.edit(&c)
			err := c.CheckTraining()
			switch {
			case tc.refuse == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refuse != "" && err == nil:
				t.Fatalf("accepted, want a refusal naming %q", tc.refuse)
			case tc.refuse != "" && (!errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.refuse)):
				t.Fatalf("error %q, want ErrConfig naming %q", err, tc.refuse)
			}
		})
	}
}

func TestKeysShowSamplingDefaults(t *testing.T) {
	lines := strings.Join(Keys(), "\n")
	for _, want := range []string{"planner.temperature", "(default: 1)", "planner.top_k", "(default: -1)",
		"executor.repetition_penalty", "judge.temperature", "(default: the server's)", "planner.logprobs_mode"} {
		if !strings.Contains(lines, want) {
			t.Errorf("help keys lack %q", want)
		}
	}
}
