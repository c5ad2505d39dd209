package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamplesLoadAndValidate keeps the YAML files of examples/ working: each
// loads with LoadConfig (no unknown keys), passes Validate, and one with
// trainers passes CheckTraining, so an example never goes stale when a key
// changes.
func TestExamplesLoadAndValidate(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no examples/*.yaml found")
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cfg, err := LoadConfig(path)
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if cfg.Train.PlannerTrainer != "" || cfg.Train.ExecutorTrainer != "" {
				if err := cfg.CheckTraining(); err != nil {
					t.Fatalf("CheckTraining: %v", err)
				}
			}
			if cfg.Sim {
				t.Errorf("sim: true: an example runs against servers named by URL (mgrpo rollout --sim needs no file)")
			}
		})
	}
}

// TestExamplesHoldNoSecrets checks that no example carries a key: keys come
// from environment variables named by api_key_env.
func TestExamplesHoldNoSecrets(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "examples", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			// An example folder holds agent code (examples/openai-agents-js),
			// which reads its one key from MGRPO_GATEWAY_TOKEN and is run by
			// its own tests; its package names hold "@".
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(data), "\n") {
			code, _, _ := strings.Cut(line, "#")
			for _, bad := range []string{"api_key:", "sk-", "Bearer ", "@"} {
				if strings.Contains(code, bad) {
					t.Errorf("%s:%d: %q looks like a secret; name an environment variable with api_key_env instead", path, n+1, strings.TrimSpace(line))
				}
			}
		}
	}
}
