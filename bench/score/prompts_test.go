package score

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenCase is a made-up question; golden files must never hold benchmark text.
var goldenCase = Case{
	Question:   "What is the capital of {France}?",
	Answer:     "Paris",
	Prediction: "The capital is Paris.",
}

func TestPromptsGolden(t *testing.T) {
	for name, tmpl := range map[string]string{
		"webthinker":  PromptWebThinker,
		"tongyi_gaia": PromptTongyiGAIA,
		"xbench":      PromptXBench,
	} {
		t.Run(name, func(t *testing.T) {
			got := RenderPrompt(tmpl, goldenCase)
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (run with -update to create): %v", err)
			}
			if got != string(want) {
				t.Errorf("prompt %s differs from %s:\ngot:\n%s\nwant:\n%s", name, path, got, want)
			}
		})
	}
}
