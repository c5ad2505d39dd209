package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestStartTemplateAndRoutes checks that a world's inference server takes
// the template behaviours and the disabled route families of Options, and
// that a bad route list is an error naming it.
func TestStartTemplateAndRoutes(t *testing.T) {
	if _, err := Start(Options{Seed: 1, DisabledRoutes: "render,nope"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("Start with a bad route family: %v, want an error naming it", err)
	}
	w, err := Start(Options{Seed: 1, DisabledRoutes: "render", Template: TemplateOptions{MergeToolResults: true}, RecordGenerations: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	post := func(path string, body any) (int, string) {
		b, _ := json.Marshal(body)
		resp, err := http.Post(w.LLMURL+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	msgs := []map[string]any{{"role": "user", "content": "q"}, {"role": "tool", "content": "a"}, {"role": "tool", "content": "b"}}
	if st, _ := post("/v1/chat/completions/render", map[string]any{"messages": msgs}); st != http.StatusNotFound {
		t.Errorf("render with the family disabled: status %d, want 404", st)
	}
	st, body := post("/tokenize", map[string]any{"messages": msgs, "return_token_strs": true})
	if st != http.StatusOK || !strings.Contains(body, "tool_response") || strings.Contains(body, `"tool"`) {
		t.Errorf("tokenize with merged tool results: %d %s", st, body)
	}
	if st, body := post("/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 5}); st != http.StatusOK {
		t.Fatalf("chat: %d %s", st, body)
	}
	if g := w.Generations(); len(g) != 1 || len(g[0].IDs) != 5 {
		t.Errorf("Generations = %+v, want the one chat completion of 5 ids", g)
	}
}
