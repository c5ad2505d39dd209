package llm

import (
	"context"
	"encoding/json"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

func TestOverriddenRecordsOnlyDifferences(t *testing.T) {
	seed := int64(3)
	role := Sampling{Temperature: ptr(1.0), TopP: ptr(1.0), TopK: ptr(-1)}
	capped := role
	capped.MaxTokens = 512
	for _, tc := range []struct {
		name     string
		role     Sampling
		override *Sampling
		want     *Sampling
	}{
		{"no override", role, nil, nil},
		{"seed and the budget's cap", role, &Sampling{Seed: &seed, MaxTokens: 2048}, nil},
		{"the role's own cap again", capped, &Sampling{Seed: &seed, MaxTokens: 512}, nil},
		{"another cap than the role's", capped, &Sampling{Seed: &seed, MaxTokens: 2048},
			&Sampling{Temperature: ptr(1.0), TopP: ptr(1.0), TopK: ptr(-1), MaxTokens: 2048}},
		{"another temperature", role, &Sampling{Seed: &seed, Temperature: ptr(0.6), MaxTokens: 64},
			&Sampling{Temperature: ptr(0.6), TopP: ptr(1.0), TopK: ptr(-1), MaxTokens: 64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.role.overridden(tc.override)
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("recorded %+v, want nothing", *got)
			case tc.want != nil && (got == nil || !got.equal(*tc.want)):
				t.Fatalf("recorded %+v, want %+v", got, *tc.want)
			}
		})
	}
}

// TestTurnCarriesOverriddenSampling checks, against the sim in both
// dialects, that a call sent as the role samples has no Turn.Sampling, one
// sent at another temperature records it without its seed, and that it
// round-trips through JSON (turns travel between processes).
func TestTurnCarriesOverriddenSampling(t *testing.T) {
	for _, dialect := range []string{DialectVLLM, DialectSGLang} {
		t.Run(dialect, func(t *testing.T) {
			srv := mustSim(t, simConfig(dialect, 1), nil)
			c := mustClient(t, Config{Role: "executor", Dialect: dialect, Endpoints: []string{srv.ts.URL},
				CaptureTokens: true, Sampling: Sampling{Temperature: ptr(1.0), TopP: ptr(1.0)}})
			seed := int64(5)
			msgs := []openai.ChatCompletionMessage{{Role: "user", Content: "Who founded Velmora Labs?"}}
			same, err := c.Chat(context.Background(), Request{Messages: msgs, Sampling: &Sampling{Seed: &seed, MaxTokens: 64}})
			if err != nil {
				t.Fatal(err)
			}
			if same.Sampling != nil {
				t.Errorf("a call sampled as its role recorded %+v", *same.Sampling)
			}
			other, err := c.Chat(context.Background(), Request{Messages: msgs, Sampling: &Sampling{Seed: &seed, MaxTokens: 64, Temperature: ptr(0.6)}})
			if err != nil {
				t.Fatal(err)
			}
			if other.Sampling == nil || other.Sampling.Temperature == nil || *other.Sampling.Temperature != 0.6 || other.Sampling.Seed != nil {
				t.Fatalf("a call at temperature 0.6 recorded %+v, want temperature 0.6 and no seed", other.Sampling)
			}
			b, err := json.Marshal(other)
			if err != nil {
				t.Fatal(err)
			}
			var back Turn
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back.Sampling == nil || !back.Sampling.equal(*other.Sampling) {
				t.Errorf("after JSON: %+v, want %+v", back.Sampling, *other.Sampling)
			}
		})
	}
}
