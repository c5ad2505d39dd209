package run

import (
	"errors"
	"strings"
	"testing"
)

// TestValidateRefusesAnUnknownParser: a parser the client lacks is a
// config error naming the key and its flag; known names pass.
func TestValidateRefusesAnUnknownParser(t *testing.T) {
	c := DefaultConfig()
	c.Tasks, c.Out = "tasks.jsonl", "out"
	c.Planner.URLs, c.Planner.Model = []string{"http://127.0.0.1:8000"}, "m"
	c.Executor.URLs, c.Executor.Model = []string{"http://127.0.0.1:8001"}, "m"
	c.Planner.Parser, c.Executor.Parser = "deepseek_r1", "llama3_json"
	err := c.Validate()
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "executor.parser") || !strings.Contains(err.Error(), "llama3_json") {
		t.Fatalf("err %v, want executor.parser named", err)
	}
	if strings.Contains(err.Error(), "planner.parser") {
		t.Errorf("a known parser was refused: %v", err)
	}
	c.Executor.Parser = "hermes"
	if err := c.Validate(); err != nil && strings.Contains(err.Error(), "parser") {
		t.Errorf("known parsers refused: %v", err)
	}
}
