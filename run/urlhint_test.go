package run

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateGivesTheBaseURLForARoute(t *testing.T) {
	c := DefaultConfig()
	c.Tasks, c.Out = "tasks.jsonl", "out"
	c.Planner.URLs, c.Planner.Model = []string{"http://127.0.0.1:8000/v1/chat/completions"}, "m"
	c.Executor.URLs, c.Executor.Model = []string{"http://127.0.0.1:8001/v1/", "http://127.0.0.1:8002/generate"}, "m"
	err := c.Validate()
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("err %v, want ErrConfig", err)
	}
	for _, want := range []string{"give http://127.0.0.1:8000/v1 (the client adds /chat/completions itself)",
		"give http://127.0.0.1:8002 (the client adds /generate itself)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\ndoes not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "8001") {
		t.Errorf("a base URL was reported: %v", err)
	}
}

func TestSimWithAnEndpointFailsValidation(t *testing.T) {
	c := DefaultConfig()
	c.Sim, c.Out = true, "out"
	c.Planner.URLs, c.Executor.Model = []string{"http://127.0.0.1:8000/v1"}, "Qwen/Qwen3-8B"
	err := c.Validate()
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "--sim and --planner-url") || !strings.Contains(err.Error(), "--sim and --executor-model") {
		t.Fatalf("err %v, want both conflicts named", err)
	}
}
