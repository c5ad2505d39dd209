package llm

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// pinnedChat asks for a greedy first planner turn pinned to pin ("": no
// pin) and returns the status, the version the response reports (the
// header, and SGLang's meta_info when the dialect has it) and whether the
// planner answered at once.
func pinnedChat(t *testing.T, base, pin string) (status int, header, meta string, answered bool) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"model": DefaultModel, "temperature": 0, "tools": plannerTools, "return_meta_info": true,
		"messages": []map[string]any{{"role": "system", "content": plannerSystem}, {"role": "user", "content": question}}})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if pin != "" {
		req.Header.Set(PinHeader, pin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, "", string(b), false
	}
	var out struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("X-Weight-Version"), out.Metadata["weight_version"], out.Choices[0].FinishReason == "stop"
}

// TestPinnedRequestsServeTheirVersion loads two versions after the initial
// weights (1 answers at once, 2 is the initial params again) and asks with
// pins: each is served with its version's weights, and reports it; a
// version never held or let go is served (and reported) as the current
// one; an unpinned request is served as before.
func TestPinnedRequestsServeTheirVersion(t *testing.T) {
	dir := t.TempDir()
	files := map[string]*policy.Params{"guess.json": guessingParams(t), "default.json": policy.DefaultParams(policy.DefaultSkills())}
	for name, p := range files {
		if err := p.WriteFile(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ dialect, route string }{
		{DialectSGLang, "/update_weights_from_disk"},
		{DialectVLLM, "/sim/update_weights"},
	} {
		t.Run(tt.dialect, func(t *testing.T) {
			cfg := testConfig(tt.dialect)
			cfg.KeptVersions = 3
			_, ts := MustServer(t, cfg)
			update := func(file, version string) {
				t.Helper()
				if st, _, b := post(t, ts.URL+tt.route, map[string]any{"model_path": filepath.Join(dir, file), "weight_version": version}); st != 200 {
					t.Fatalf("update to %s: %d %s", version, st, b)
				}
			}
			update("guess.json", "1")
			update("default.json", "2")
			for _, c := range []struct {
				pin, want string
				answers   bool
			}{
				{"", "2", false},
				{"0", "default", false},
				{"1", "1", true},
				{"2", "2", false},
				{"7", "2", false},
			} {
				st, header, meta, answered := pinnedChat(t, ts.URL, c.pin)
				if st != 200 || header != c.want || answered != c.answers {
					t.Errorf("pin %q: %d, version %q, answered at once %v; want 200, %q, %v", c.pin, st, header, answered, c.want, c.answers)
				}
				if tt.dialect == DialectSGLang && meta != c.want {
					t.Errorf("pin %q: meta_info.weight_version %q, want %q", c.pin, meta, c.want)
				}
			}
			// Three kept: default, 1, 2 → 1, 2, 3; the initial weights are gone.
			update("guess.json", "3")
			if st, header, _, answered := pinnedChat(t, ts.URL, "0"); st != 200 || header != "3" || !answered {
				t.Errorf("pin 0 after the initial weights were let go: %d, version %q, answered %v; want the current version 3", st, header, answered)
			}
			if st, _, body, _ := pinnedChat(t, ts.URL, "v1"); st != http.StatusBadRequest || !bytes.Contains([]byte(body), []byte(PinHeader)) {
				t.Errorf("pin %q: %d %s, want 400 naming %s", "v1", st, body, PinHeader)
			}
		})
	}
}
