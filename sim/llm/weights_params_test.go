package llm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// guessingParams are the default params with the planner's guess pushed to
// a probability of about 1.
func guessingParams(tb testing.TB) *policy.Params {
	tb.Helper()
	v := policy.DefaultParams(policy.DefaultSkills()).Vector()
	v[0] = policy.MaxBias // planner.guess.bias
	p, err := policy.ParamsFromVector(v)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// plannerAnswersAtOnce asks for a greedy first planner turn and reports
// whether it answered instead of delegating.
func plannerAnswersAtOnce(t *testing.T, base string) bool {
	t.Helper()
	st, _, b := post(t, base+"/v1/chat/completions", map[string]any{"model": DefaultModel, "temperature": 0, "tools": plannerTools,
		"messages": []map[string]any{{"role": "system", "content": plannerSystem}, {"role": "user", "content": question}}})
	if st != 200 {
		t.Fatalf("chat: %d %s", st, b)
	}
	var resp struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.Choices[0].FinishReason == "stop"
}

func TestUpdateWeightsLoadsParams(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sim-qwen3"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := guessingParams(t).WriteFile(filepath.Join(dir, "sim-qwen3", "step-1.json")); err != nil {
		t.Fatal(err)
	}
	var good strings.Builder
	if err := guessingParams(t).Write(&good); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(strings.Replace(good.String(), `"guess": [`, `"guess": [1, `, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dialect, route string
	}{
		{DialectSGLang, "/update_weights_from_disk"},
		{DialectVLLM, "/sim/update_weights"},
	}
	for _, tt := range tests {
		t.Run(tt.dialect, func(t *testing.T) {
			cfg := testConfig(tt.dialect)
			cfg.CheckpointDir = dir
			s, ts := MustServer(t, cfg)
			if plannerAnswersAtOnce(t, ts.URL) {
				t.Fatalf("default params: the planner answers at once")
			}
			update := func(path, version string) (int, string) {
				st, _, b := post(t, ts.URL+tt.route, map[string]any{"model_path": path, "weight_version": version})
				return st, string(b)
			}
			if st, b := update("tinker://sim-qwen3/sampler_weights/step-1", "1"); st != 200 {
				t.Fatalf("update: %d %s", st, b)
			}
			if !plannerAnswersAtOnce(t, ts.URL) || s.WeightVersion() != "1" {
				t.Fatalf("after loading guessing params: answers at once %v, version %q", plannerAnswersAtOnce(t, ts.URL), s.WeightVersion())
			}
			for _, c := range []struct{ path, want string }{
				{bad, "roles.planner.guess has 4 entries, want 3"},
				{"file://" + bad, "roles.planner.guess has 4 entries, want 3"},
				{"tinker://sim-qwen3/sampler_weights/step-9", "step-9.json"},
				{"file://" + filepath.Join(dir, "missing.json"), "missing.json"},
			} {
				st, b := update(c.path, "2")
				if st != 400 || !strings.Contains(b, c.want) {
					t.Errorf("update from %s: %d %s, want 400 naming %q", c.path, st, b, c.want)
				}
			}
			if s.WeightVersion() != "1" || !plannerAnswersAtOnce(t, ts.URL) {
				t.Errorf("after refused updates: version %q, want the old params and version 1", s.WeightVersion())
			}
			// A path that is not a file is only recorded, as before.
			if st, b := update("/ckpt/step-3", "3"); st != 200 || s.WeightVersion() != "3" || s.ModelPath() != "/ckpt/step-3" {
				t.Errorf("update from a checkpoint directory path: %d %s, version %q", st, b, s.WeightVersion())
			}
			if !plannerAnswersAtOnce(t, ts.URL) {
				t.Errorf("a recorded path changed the params")
			}
		})
	}
}
