package llm

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/internal/httpretry"
)

// TestDialectHint: a 404 from SGLang's route suggests vLLM, a vLLM answer
// without token ids suggests SGLang, anything else suggests nothing.
func TestDialectHint(t *testing.T) {
	notFound := &httpretry.StatusError{Code: http.StatusNotFound}
	if h := DialectHint(DialectSGLang, notFound); !strings.Contains(h, "--dialect vllm") {
		t.Errorf("sglang 404: %q", h)
	}
	if h := DialectHint(DialectVLLM, ErrMissingTokenIDs); !strings.Contains(h, "--dialect sglang") {
		t.Errorf("vllm without token ids: %q", h)
	}
	if h := DialectHint(DialectVLLM, errors.New("connection refused")); h != "" {
		t.Errorf("a refused connection: %q", h)
	}
}
