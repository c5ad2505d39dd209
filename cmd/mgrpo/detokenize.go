package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/mgrpo/mgrpo/bench/view"
	"github.com/mgrpo/mgrpo/internal/redact"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// simDetokenizer is the sim's tokenizer, in process: the viewer decodes
// every token of a sim run without a server.
type simDetokenizer struct{ tok *simllm.Tokenizer }

func (d simDetokenizer) Detokenize(_ context.Context, ids []int) (string, error) {
	return d.tok.Decode(ids)
}

// engineDetokenizer asks an inference engine's detokenize route: vLLM's
// POST /detokenize (answering {"prompt"}) or SGLang's POST /v1/detokenize
// (answering {"text"}, asked to keep special tokens).
type engineDetokenizer struct {
	client  *http.Client
	base    string
	model   string
	dialect string
}

var _ view.Detokenizer = engineDetokenizer{}

// newEngineDetokenizer checks the flags of an engine detokenizer.
func newEngineDetokenizer(base, model, dialect string) (engineDetokenizer, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return engineDetokenizer{}, usagef("--detokenize-url %s: want the engine's base URL, http(s)://HOST:PORT", redact.URL(base))
	}
	if dialect != simllm.DialectVLLM && dialect != simllm.DialectSGLang {
		return engineDetokenizer{}, usagef("--detokenize-dialect %q: want vllm or sglang", dialect)
	}
	if model == "" {
		return engineDetokenizer{}, usagef("--detokenize-model is required with --detokenize-url (the served model name)")
	}
	return engineDetokenizer{client: &http.Client{}, base: strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/v1"), model: model, dialect: dialect}, nil
}

func (d engineDetokenizer) Detokenize(ctx context.Context, ids []int) (string, error) {
	path, body := "/detokenize", map[string]any{"model": d.model, "tokens": ids}
	if d.dialect == simllm.DialectSGLang {
		path, body["skip_special_tokens"] = "/v1/detokenize", false
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("detokenize: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.base+path, bytes.NewReader(raw))
	if err != nil {
		return "", fmt.Errorf("detokenize: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("detokenize at %s: %w", redact.URL(d.base+path), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return "", fmt.Errorf("detokenize at %s: %w", redact.URL(d.base+path), err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("detokenize at %s: status %d: %.200s", redact.URL(d.base+path), resp.StatusCode, b)
	}
	var out struct {
		Prompt *string `json:"prompt"`
		Text   *string `json:"text"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return "", fmt.Errorf("detokenize at %s: %w", redact.URL(d.base+path), err)
	}
	switch {
	case out.Prompt != nil:
		return *out.Prompt, nil
	case out.Text != nil:
		return *out.Text, nil
	}
	return "", fmt.Errorf("detokenize at %s: the answer has neither \"prompt\" nor \"text\"", redact.URL(d.base+path))
}
