package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// TestEngineDetokenizer decodes ids through both dialects' detokenize
// routes of the sim server and compares with its tokenizer.
func TestEngineDetokenizer(t *testing.T) {
	tok := simllm.NewTokenizer()
	ids := tok.Encode("<|im_start|>assistant\n<think>the author</think> is Pradra")
	want, err := tok.Decode(ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, dialect := range []string{simllm.DialectVLLM, simllm.DialectSGLang} {
		cfg := simllm.DefaultConfig()
		cfg.Dialect = dialect
		s, err := simllm.NewServer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s.Handler())
		det, err := newEngineDetokenizer(srv.URL+"/v1", simllm.DefaultModel, dialect)
		if err != nil {
			t.Fatal(err)
		}
		got, err := det.Detokenize(context.Background(), ids)
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", dialect, got, err, want)
		}
		det.model = "other-model"
		if dialect == simllm.DialectVLLM {
			if _, err := det.Detokenize(context.Background(), ids); err == nil || !strings.Contains(err.Error(), "status 404") && !strings.Contains(err.Error(), "status 400") {
				t.Errorf("%s: a model the server does not serve: %v, want its status", dialect, err)
			}
		}
		srv.Close()
	}
	for _, tc := range []struct{ url, model, dialect, want string }{
		{"localhost:8000", "m", "vllm", "--detokenize-url"},
		{"http://h:1", "m", "openai", "--detokenize-dialect"},
		{"http://h:1", "", "vllm", "--detokenize-model"},
	} {
		if _, err := newEngineDetokenizer(tc.url, tc.model, tc.dialect); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc, err, tc.want)
		}
	}
}
