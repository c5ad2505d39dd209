package llm

import (
	"strings"
	"testing"
	"time"
)

func TestEndpointCheckTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		e       EndpointConfig
		flagged bool
		want    []string
	}{
		{"auto everywhere", EndpointConfig{}, true, nil},
		{"consistent", EndpointConfig{CallTimeout: TimeoutOf(10 * time.Minute), AttemptTimeout: TimeoutOf(time.Minute), IdleTimeout: TimeoutOf(30 * time.Second)}, true, nil},
		{"zero call", EndpointConfig{CallTimeout: TimeoutOf(0)}, true, []string{"planner.call_timeout (--call-timeout): 0s: must be positive"}},
		{"attempt not shorter than call", EndpointConfig{CallTimeout: TimeoutOf(time.Minute), AttemptTimeout: TimeoutOf(time.Minute)}, true,
			[]string{"planner.attempt_timeout (--attempt-timeout): 1m0s: must be shorter than planner.call_timeout (--call-timeout) 1m0s"}},
		{"idle not shorter than attempt, unflagged", EndpointConfig{AttemptTimeout: TimeoutOf(time.Minute), IdleTimeout: TimeoutOf(2 * time.Minute)}, false,
			[]string{"planner.idle_timeout: 2m0s: must be shorter than planner.attempt_timeout 1m0s"}},
		{"negative idle", EndpointConfig{IdleTimeout: TimeoutOf(-time.Second)}, true, []string{"planner.idle_timeout (--idle-timeout): -1s: must be positive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.e.CheckTimeouts("planner", tc.flagged)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %v, want %d", got, len(tc.want))
			}
			for i, err := range got {
				if !strings.HasPrefix(err.Error(), tc.want[i]) {
					t.Errorf("problem %q, want it to start %q", err, tc.want[i])
				}
			}
		})
	}
}

func TestEndpointCheckRouteURLs(t *testing.T) {
	e := EndpointConfig{URLs: []string{"http://h:8000/v1/chat/completions", "http://h:8001/v1/", "http://h:8002/generate?x=1", "http://h:8003/health"}}
	got := e.CheckRouteURLs("executor", "executor-url")
	want := []string{
		"executor.urls (--executor-url): http://h:8000/v1/chat/completions is a route, not a base URL: give http://h:8000/v1 (the client adds /chat/completions itself)",
		"executor.urls (--executor-url): http://h:8002/generate?x=1 is a route, not a base URL: give http://h:8002 (the client adds /generate itself)",
		"executor.urls (--executor-url): http://h:8003/health is a route, not a base URL: give http://h:8003 (the client adds /health itself)",
	}
	if len(got) != len(want) {
		t.Fatalf("problems %v, want %d", got, len(want))
	}
	for i, err := range got {
		if err.Error() != want[i] {
			t.Errorf("problem %q, want %q", err, want[i])
		}
	}
}

func TestEndpointCheckDialect(t *testing.T) {
	engines := []string{DialectVLLM, DialectSGLang}
	if p := (EndpointConfig{Dialect: DialectSGLang, Parser: "qwen3"}).CheckDialect("planner", "dialect", "planner-parser", engines); len(p) != 0 {
		t.Errorf("sglang with qwen3: %v, want none", p)
	}
	p := (EndpointConfig{Dialect: DialectOpenAI, Parser: "nope"}).CheckDialect("planner", "dialect", "planner-parser", engines)
	if len(p) != 2 || p[0].Error() != `planner.dialect (--dialect): "openai": want vllm or sglang` || !strings.HasPrefix(p[1].Error(), "planner.parser (--planner-parser): ") {
		t.Errorf("openai with an unknown parser: %v, want the dialect and the parser named", p)
	}
}

func TestEndpointCheckLogprobs(t *testing.T) {
	onPolicy := OnPolicySampling(EndpointConfig{Dialect: DialectVLLM})
	if p := onPolicy.CheckLogprobs("planner"); len(p) != 0 {
		t.Errorf("on-policy sampling: %v, want none", p)
	}
	bad := onPolicy
	bad.LogprobsMode = "cooked"
	if p := bad.CheckLogprobs("planner"); len(p) != 1 || p[0].Error() != `planner.logprobs_mode: "cooked": want raw or processed` {
		t.Errorf("unknown mode: %v", p)
	}
	hot := onPolicy
	temp := 0.6
	hot.Temperature = &temp
	if p := hot.CheckLogprobs("executor"); len(p) != 1 || !strings.HasPrefix(p[0].Error(), "executor: ") {
		t.Errorf("temperature 0.6 against raw vLLM logprobs: %v, want the mismatch named", p)
	}
	hot.LogprobsMode = LogprobsProcessed
	if p := hot.CheckLogprobs("executor"); len(p) != 0 {
		t.Errorf("temperature 0.6 against processed logprobs: %v, want none", p)
	}
}
