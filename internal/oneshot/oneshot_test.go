package oneshot

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// servers starts the fake world.
func servers(t *testing.T) (chat *Chat, chatURL string, web *Web, webURL string) {
	t.Helper()
	web = &Web{}
	ws := httptest.NewServer(web)
	t.Cleanup(ws.Close)
	web.URL = ws.URL
	chat = &Chat{Models: []string{"planner", "executor"}, WebURL: ws.URL}
	cs := httptest.NewServer(chat)
	t.Cleanup(cs.Close)
	return chat, cs.URL, web, ws.URL
}

// post sends body to url and decodes the answer into v, returning the raw
// bytes.
func post(t *testing.T, url string, body any, header http.Header, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %v: %s", url, resp.StatusCode, err, got)
	}
	if err := json.Unmarshal(got, v); err != nil {
		t.Fatalf("decode %s: %v", got, err)
	}
	return got
}

type completion struct {
	Choices []struct {
		Message struct {
			Content          *string    `json:"content"`
			ReasoningContent string     `json:"reasoning_content"`
			ToolCalls        []toolCall `json:"tool_calls"`
		} `json:"message"`
		Logprobs struct {
			Content []struct {
				Token   string  `json:"token"`
				Logprob float64 `json:"logprob"`
				Bytes   []int   `json:"bytes"`
			} `json:"content"`
		} `json:"logprobs"`
		FinishReason string `json:"finish_reason"`
		TokenIDs     []int  `json:"token_ids"`
	} `json:"choices"`
	PromptTokenIDs []int `json:"prompt_token_ids"`
}

// TestExecutorConversation plays an executor's three turns and checks the
// wire shape (compact, one logprob entry per completion id) and that each
// turn's prompt ids extend the previous prompt and completion exactly.
func TestExecutorConversation(t *testing.T) {
	_, chatURL, _, webURL := servers(t)
	tools := json.RawMessage(`[{"type":"function","function":{"name":"search"}},{"type":"function","function":{"name":"visit"}}]`)
	msgs := []map[string]any{
		{"role": "system", "content": "You are a research executor."},
		{"role": "user", "content": "Find the registry code of item 7."},
	}
	var prev []int
	wantTools := []string{"search", "visit", ""}
	for turn, want := range wantTools {
		var c completion
		raw := post(t, chatURL+"/v1/chat/completions", map[string]any{"model": "executor", "messages": msgs, "tools": tools,
			"logprobs": true, "top_logprobs": 0, "return_token_ids": true}, nil, &c)
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil || !bytes.Equal(compact.Bytes(), raw) {
			t.Errorf("turn %d: answer is not compact JSON: %.200s", turn, raw)
		}
		ch := c.Choices[0]
		if len(ch.Logprobs.Content) != len(ch.TokenIDs) {
			t.Errorf("turn %d: %d logprob entries for %d ids", turn, len(ch.Logprobs.Content), len(ch.TokenIDs))
		}
		if prev != nil && !slices.Equal(c.PromptTokenIDs[:len(prev)], prev) {
			t.Errorf("turn %d: prompt ids do not extend the previous prompt and completion", turn)
		}
		prev = append(slices.Clone(c.PromptTokenIDs), ch.TokenIDs...)
		got := ""
		if len(ch.Message.ToolCalls) > 0 {
			got = ch.Message.ToolCalls[0].Function.Name
		}
		if got != want {
			t.Fatalf("turn %d: tool %q, want %q", turn, got, want)
		}
		if want == "" {
			if ch.Message.Content == nil || !strings.Contains(*ch.Message.Content, code(7)) {
				t.Errorf("report %v does not state %s", ch.Message.Content, code(7))
			}
			break
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": ch.Message.Content,
			"reasoning_content": ch.Message.ReasoningContent, "tool_calls": ch.Message.ToolCalls})
		obs := "results"
		if want == "visit" {
			var args struct{ URL []string }
			json.Unmarshal([]byte(ch.Message.ToolCalls[0].Function.Arguments), &args)
			if len(args.URL) != 1 || !strings.HasPrefix(args.URL[0], webURL+"/page/7/") {
				t.Errorf("visit arguments %s, want a page of item 7", ch.Message.ToolCalls[0].Function.Arguments)
			}
		}
		msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": ch.Message.ToolCalls[0].ID, "content": obs})
		// Ids end with the end-of-turn token; the next prompt adds "\n".
		prev = append(prev, tokNewline)
	}
}

// TestSearch checks the Serper shape and that results link to pages that
// state the code.
func TestSearch(t *testing.T) {
	_, _, _, webURL := servers(t)
	var res struct {
		Organic []struct {
			Title, Link, Snippet string
			Position             int
		}
	}
	post(t, webURL+"/search", map[string]any{"q": "registry code item 3", "gl": "us", "hl": "en", "num": 10},
		http.Header{"X-Api-Key": {"k"}}, &res)
	if len(res.Organic) != 10 || res.Organic[0].Position != 1 {
		t.Fatalf("got %d results (first position %d), want 10 from 1", len(res.Organic), res.Organic[0].Position)
	}
	resp, err := http.Get(res.Organic[0].Link)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(page, []byte(code(3))) {
		t.Errorf("page %s does not state %s", res.Organic[0].Link, code(3))
	}
}

// TestPythonLoop runs loop.py on two questions and checks it answered them.
func TestPythonLoop(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: the Python loop is not checked")
	}
	chat, chatURL, web, webURL := servers(t)
	dir := t.TempDir()
	tasks := filepath.Join(dir, "tasks.jsonl")
	if err := WriteTasks(tasks, Tasks(2)); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, "loop.py", "--chat", chatURL+"/v1", "--web", webURL, "--tasks", tasks,
		"--group-size", "2", "--concurrency", "2", "--out", filepath.Join(dir, "out.jsonl")).CombinedOutput()
	if err != nil {
		t.Fatalf("loop.py: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "calls 20 rollouts 4 correct 4"; got != want {
		t.Errorf("loop.py printed %q, want %q", got, want)
	}
	if chat.Calls() != 20 || web.Searches() != 4 || web.Visits() == 0 {
		t.Errorf("servers answered %d chat calls, %d searches, %d visits; want 20, 4, ≥ 1", chat.Calls(), web.Searches(), web.Visits())
	}
}
