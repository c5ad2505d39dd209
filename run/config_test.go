package run

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.yaml")
	os.WriteFile(path, []byte(`steps: 3
grace: 10s
planner:
  urls: [http://a:8000, http://b:8000]
  temperature: 0
  top_k: 20
  chat_template_kwargs: {enable_thinking: false}
  call_timeout: 10m
  attempt_timeout: 90s
executor:
  call_timeout: auto
budgets:
  rollout_timeout: 5m
prompts:
  executor_user: "Task: {{.Task}}"
`), 0o644)
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Steps != 3 || cfg.Grace.Seconds() != 10 || cfg.Budgets.RolloutTimeout.Minutes() != 5 {
		t.Errorf("steps %d grace %v rollout_timeout %v", cfg.Steps, cfg.Grace, cfg.Budgets.RolloutTimeout)
	}
	if len(cfg.Planner.URLs) != 2 || cfg.Planner.Temperature == nil || *cfg.Planner.Temperature != 0 || cfg.Planner.TopK == nil || *cfg.Planner.TopK != 20 {
		t.Errorf("planner = %+v", cfg.Planner)
	}
	if cfg.Planner.CallTimeout != TimeoutOf(10*time.Minute) || cfg.Planner.AttemptTimeout != TimeoutOf(90*time.Second) ||
		cfg.Executor.CallTimeout != (Timeout{}) || cfg.Executor.AttemptTimeout != (Timeout{}) {
		t.Errorf("timeouts: planner %v/%v, executor %v/%v; want 10m/1m30s and auto/auto",
			cfg.Planner.CallTimeout, cfg.Planner.AttemptTimeout, cfg.Executor.CallTimeout, cfg.Executor.AttemptTimeout)
	}
	if v, ok := cfg.Planner.ChatTemplateKwargs["enable_thinking"].(bool); !ok || v {
		t.Errorf("chat_template_kwargs = %v", cfg.Planner.ChatTemplateKwargs)
	}
	if cfg.GroupSize != DefaultConfig().GroupSize || cfg.Prompts["executor_user"] != "Task: {{.Task}}" {
		t.Errorf("defaults or prompts lost: group_size %d prompts %v", cfg.GroupSize, cfg.Prompts)
	}
	os.WriteFile(path, []byte("grace: soon\n"), 0o644)
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), "soon") {
		t.Errorf("bad duration: err = %v", err)
	}
}

func TestLoadConfigErrorsSpeakYAML(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"wrong type", "steps: 2\ngroup_size: abc\n", []string{"line 2", "key group_size", "want an integer, got a string"}},
		{"nested wrong type", "budgets:\n  max_tokens: [1]\n", []string{"line 2", "key max_tokens", "want an integer, got a list"}},
		{"unknown key", "group_sise: 8\n", []string{"group_sise"}},
		{"bad duration", "grace: soon\n", []string{"soon", "30s"}},
		{"bad timeout", "planner:\n  attempt_timeout: soon\n", []string{"soon", "auto or a duration"}},
		{"syntax", "group_size: [\n", []string{"run.yaml", "]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "run.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadConfig(path)
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err %v, want ErrConfig", err)
			}
			for _, w := range append(tt.want, "--config "+path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, goName := range []string{"GroupSize", "Config.", "struct field", "interface {}"} {
				if strings.Contains(err.Error(), goName) {
					t.Errorf("error %q names Go's %q", err, goName)
				}
			}
		})
	}
}

func TestLoadConfigReportsEveryUnknownKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	yamlText := "seed: 3\nbatchsize: 2\ngroup_size: 4\nplanner:\n  modle: m\n  urls: [http://127.0.0.1:1/v1]\nprompts:\n  anything: x\nbudgets:\n  rollout_timeout: 5m\n"
	if err := os.WriteFile(path, []byte(yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfig(path)
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("err %v, want ErrConfig", err)
	}
	for _, want := range []string{"2 unknown key(s)", "line 2, column 1: unknown key batchsize (did you mean batch_size?)",
		"line 5, column 3: unknown key planner.modle (did you mean planner.model?)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}
