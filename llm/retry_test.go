package llm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/internal/httpretry"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

func userMsg(s string) []openai.ChatCompletionMessage {
	return []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: s}}
}

// TestSimFaults injects each fault the sim knows at a high rate: every call
// succeeds within the retry budget, and some needed retries (a bounded
// stall shorter than the attempt timeout is only a slow answer).
func TestSimFaults(t *testing.T) {
	faults := []struct {
		name string
		f    simllm.Faults
	}{
		{"500", simllm.Faults{Rate500: 0.4}},
		{"503", simllm.Faults{Rate503: 0.4}},
		{"429", simllm.Faults{Rate429: 0.4}},
		{"drop", simllm.Faults{RateDrop: 0.4}},
		{"malformed", simllm.Faults{RateMalformed: 0.4}},
		{"stall", simllm.Faults{RateStall: 0.3}},
		{"stall-bounded", simllm.Faults{RateStall: 0.3, StallDuration: 20 * time.Millisecond}},
	}
	for _, dialect := range []string{DialectVLLM, DialectSGLang} {
		for _, fc := range faults {
			t.Run(dialect+"/"+fc.name, func(t *testing.T) {
				t.Parallel()
				cfg := simConfig(dialect, 9)
				cfg.Faults = fc.f
				s := mustSim(t, cfg, nil)
				rp := fastRetry()
				rp.MaxAttempts = 12
				rp.AttemptTimeout = 500 * time.Millisecond
				met := NewMetrics()
				c := mustClient(t, Config{Role: "executor", Dialect: dialect, Endpoints: []string{s.ts.URL}, CaptureTokens: true, Retry: rp, Metrics: met})
				w := mustWorld(t)
				retried := 0
				for i := range 15 {
					tr, err := c.Chat(context.Background(), Request{
						Messages: userMsg(w.Questions[i].Question), Tools: executorTools(), Sampling: &Sampling{Seed: ptr(int64(i))},
					})
					if err != nil {
						t.Fatalf("call %d: %v", i, err)
					}
					if err := checkTokens(tr); err != nil {
						t.Fatalf("call %d: %v", i, err)
					}
					if tr.Attempts > 1 {
						retried++
					}
				}
				if retried == 0 && fc.f.StallDuration == 0 {
					t.Errorf("no call needed a retry at a 30-40%% fault rate")
				}
			})
		}
	}
}

// TestSimGiveUp checks the documented error when every attempt fails.
func TestSimGiveUp(t *testing.T) {
	cfg := simConfig(DialectVLLM, 1)
	cfg.Faults = simllm.Faults{Rate500: 1}
	s := mustSim(t, cfg, nil)
	rp := fastRetry()
	rp.MaxAttempts = 3
	c := mustClient(t, Config{Dialect: DialectVLLM, Endpoints: []string{s.ts.URL}, Retry: rp})
	_, err := c.Chat(context.Background(), Request{Messages: userMsg("hi")})
	var ge *GiveUpError
	if !errors.As(err, &ge) {
		t.Fatalf("error %v (%T), want *GiveUpError", err, err)
	}
	if ge.Attempts != 3 || ge.Status != 500 || !strings.HasPrefix(ge.Endpoint, "http://127.0.0.1") {
		t.Errorf("give-up %+v", ge)
	}
	var se *httpretry.StatusError
	if !errors.As(err, &se) || se.Code != 500 {
		t.Errorf("error does not wrap a 500 StatusError: %v", err)
	}
}

// scripted returns a server answering each request with the next of steps
// (the last repeats).
func scripted(t *testing.T, steps ...func(w http.ResponseWriter)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		steps[min(i, len(steps)-1)](w)
	}))
	t.Cleanup(ts.Close)
	return ts, &n
}

const okVLLM = `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"logprobs":{"content":[{"token":"hi","logprob":-0.5,"bytes":[104,105],"top_logprobs":[]},{"token":"<|im_end|>","logprob":-0.1,"bytes":[],"top_logprobs":[]}]},"finish_reason":"stop","stop_reason":null,"token_ids":[7,2]}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5},"prompt_token_ids":[1,2,3]}`

func answer(status int, body string, hdr ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

func TestRetryScripts(t *testing.T) {
	cases := []struct {
		name     string
		steps    []func(http.ResponseWriter)
		wantErr  error
		attempts int
	}{
		{"ok", []func(http.ResponseWriter){answer(200, okVLLM)}, nil, 1},
		{"html then ok", []func(http.ResponseWriter){answer(200, "<html>bad gateway</html>", "Content-Type", "text/html"), answer(200, okVLLM)}, nil, 2},
		{"truncated then ok", []func(http.ResponseWriter){answer(200, okVLLM[:100]), answer(200, okVLLM)}, nil, 2},
		{"sse cut then ok", []func(http.ResponseWriter){answer(200, "data: {\"id\":1}\n\n", "Content-Type", "text/event-stream"), answer(200, okVLLM)}, nil, 2},
		{"logprob mismatch", []func(http.ResponseWriter){answer(200, strings.Replace(okVLLM, `"token_ids":[7,2]`, `"token_ids":[7,2,9]`, 1))}, ErrLogprobMismatch, 3},
		{"abort", []func(http.ResponseWriter){answer(200, strings.Replace(okVLLM, `"finish_reason":"stop"`, `"finish_reason":"abort"`, 1))}, ErrAborted, 3},
		{"missing prompt ids", []func(http.ResponseWriter){answer(200, strings.Replace(okVLLM, `"prompt_token_ids":[1,2,3]`, `"prompt_token_ids":null`, 1))}, ErrMissingTokenIDs, 3},
		{"400 not retried", []func(http.ResponseWriter){answer(400, `{"error":{"message":"bad"}}`)}, nil, 1},
		{"502 html then ok", []func(http.ResponseWriter){answer(502, "<html>502</html>"), answer(200, okVLLM)}, nil, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts, n := scripted(t, tc.steps...)
			rp := fastRetry()
			rp.MaxAttempts = 3
			c := mustClient(t, Config{Dialect: DialectVLLM, Endpoints: []string{ts.URL}, Retry: rp, CaptureTokens: true})
			// Token mode must be known so missing ids are an error, not a
			// legacy detection.
			c.dialect.(*vllmDialect).mode.Store(vllmModern)
			tr, err := c.Chat(context.Background(), Request{Messages: userMsg("hi")})
			if got := int(n.Load()); got != tc.attempts {
				t.Errorf("server saw %d attempts, want %d", got, tc.attempts)
			}
			switch {
			case tc.name == "400 not retried":
				var se *httpretry.StatusError
				if !errors.As(err, &se) || se.Code != 400 || se.Message != "bad" {
					t.Errorf("err %v, want StatusError 400", err)
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("err %v, want %v", err, tc.wantErr)
				}
				// Only an aborted generation comes back, partial, with the
				// error.
				if aborted := tc.wantErr == ErrAborted; tr.Partial() != aborted || aborted && (tr.FinishReason != "abort" || len(tr.CompletionIDs) != 2 || tr.Attempts != tc.attempts) {
					t.Errorf("turn %+v with error %v", tr, err)
				}
			case err != nil:
				t.Fatal(err)
			default:
				if tr.Attempts != tc.attempts || len(tr.CompletionIDs) != 2 || tr.Logprobs[0] != -0.5 {
					t.Errorf("turn %+v", tr)
				}
			}
		})
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	ts, _ := scripted(t, answer(429, `{"error":{"message":"slow down"}}`, "Retry-After", "1"), answer(200, okVLLM))
	rp := fastRetry()
	rp.MaxRetryAfter = 5 * time.Second
	c := mustClient(t, Config{Dialect: DialectVLLM, Endpoints: []string{ts.URL}, Retry: rp})
	start := time.Now()
	tr, err := c.Chat(context.Background(), Request{Messages: userMsg("hi")})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < time.Second {
		t.Errorf("retried after %v, want ≥ 1s (Retry-After)", el)
	}
	if tr.Attempts != 2 {
		t.Errorf("attempts %d", tr.Attempts)
	}
}

func TestCancelEndsWait(t *testing.T) {
	ts, _ := scripted(t, answer(503, `{"message":"busy"}`, "Retry-After", "30"))
	rp := fastRetry()
	rp.MaxRetryAfter = time.Minute
	c := mustClient(t, Config{Dialect: DialectVLLM, Endpoints: []string{ts.URL}, Retry: rp})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err := c.Chat(ctx, Request{Messages: userMsg("hi")})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("cancel took %v to end the wait", el)
	}
}

func TestGiveUpRedactsCredentials(t *testing.T) {
	ts, _ := scripted(t, answer(500, `{"message":"boom"}`))
	url := strings.Replace(ts.URL, "http://", "http://alice:s3cret@", 1) + "/v1?key=topsecret"
	rp := fastRetry()
	rp.MaxAttempts = 2
	c := mustClient(t, Config{Dialect: DialectOpenAI, Endpoints: []string{url}, APIKey: "sk-verysecret", Retry: rp})
	_, err := c.Chat(context.Background(), Request{Messages: userMsg("hi")})
	if err == nil {
		t.Fatal("no error")
	}
	for _, secret := range []string{"s3cret", "topsecret", "sk-verysecret"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error leaks %q: %v", secret, err)
		}
	}
	if !strings.Contains(err.Error(), "2 attempt") || !strings.Contains(err.Error(), "500") {
		t.Errorf("error lacks attempts or status: %v", err)
	}
}

func TestOpenAIDialectRefusesTokens(t *testing.T) {
	_, err := New(Config{Dialect: DialectOpenAI, Endpoints: []string{"http://x"}, CaptureTokens: true})
	if !errors.Is(err, ErrTokensUnsupported) {
		t.Fatalf("err %v, want ErrTokensUnsupported", err)
	}
	ts, _ := scripted(t, answer(200, okVLLM))
	c := mustClient(t, Config{Dialect: DialectOpenAI, Endpoints: []string{ts.URL}})
	tr, err := c.Chat(context.Background(), Request{Messages: userMsg("hi")})
	if err != nil {
		t.Fatal(err)
	}
	if tr.HasTokens() || tr.Message.Content != "hi" {
		t.Errorf("openai turn %+v", tr)
	}
	if _, _, err := Sequences([]*Turn{tr}); !errors.Is(err, ErrNoTokenData) {
		t.Errorf("Sequences err %v, want ErrNoTokenData", err)
	}
}

func TestTemperatureZeroSent(t *testing.T) {
	var body atomic.Value
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, r.ContentLength)
		_, _ = r.Body.Read(b)
		body.Store(string(b))
		_, _ = w.Write([]byte(okVLLM))
	}))
	t.Cleanup(ts.Close)
	c := mustClient(t, Config{Dialect: DialectVLLM, Endpoints: []string{ts.URL}, Sampling: Sampling{Temperature: ptr(0.0), TopK: ptr(20), ChatTemplateKwargs: map[string]any{"enable_thinking": false}}})
	if _, err := c.Chat(context.Background(), Request{Messages: userMsg("hi")}); err != nil {
		t.Fatal(err)
	}
	got, _ := body.Load().(string)
	for _, want := range []string{`"temperature":0`, `"top_logprobs":0`, `"top_k":20`, `"return_token_ids":true`, `"logprobs":true`, `"enable_thinking":false`} {
		if !strings.Contains(got, want) {
			t.Errorf("request body lacks %s: %s", want, got)
		}
	}
}

func TestDefaultAttemptTimeout(t *testing.T) {
	for _, tc := range []struct {
		maxTokens int
		want      time.Duration
	}{
		{0, 60*time.Second + 4096*100*time.Millisecond},
		{-1, 60*time.Second + 4096*100*time.Millisecond},
		{100, 70 * time.Second},
		{2048, 264800 * time.Millisecond},
	} {
		if got := DefaultAttemptTimeout(tc.maxTokens); got != tc.want {
			t.Errorf("DefaultAttemptTimeout(%d) = %v, want %v", tc.maxTokens, got, tc.want)
		}
	}
}

func TestRetryPolicyTimeouts(t *testing.T) {
	perMilli := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name          string
		p             RetryPolicy
		maxTokens     int
		attempt, call time.Duration
	}{
		{"defaults", RetryPolicy{}, 2048, 264800 * time.Millisecond, 3 * 264800 * time.Millisecond},
		{"defaults without a cap", RetryPolicy{}, 0, 469600 * time.Millisecond, 3 * 469600 * time.Millisecond},
		{"attempt set", RetryPolicy{AttemptTimeout: 2 * time.Second}, 2048, 2 * time.Second, 6 * time.Second},
		{"call set", RetryPolicy{CallTimeout: 20 * time.Minute}, 2048, 264800 * time.Millisecond, 20 * time.Minute},
		{"call shorter than the derived attempt", RetryPolicy{CallTimeout: time.Minute}, 2048, time.Minute, time.Minute},
		{"both set", RetryPolicy{AttemptTimeout: time.Second, CallTimeout: 10 * time.Second}, 2048, time.Second, 10 * time.Second},
		{"own function", RetryPolicy{AttemptTimeoutFor: perMilli}, 150, 150 * time.Millisecond, 450 * time.Millisecond},
		{"own function giving zero", RetryPolicy{AttemptTimeoutFor: perMilli}, 0, 469600 * time.Millisecond, 3 * 469600 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attempt, call := tc.p.Timeouts(tc.maxTokens)
			if attempt != tc.attempt || call != tc.call {
				t.Errorf("Timeouts(%d) = %v, %v; want %v, %v", tc.maxTokens, attempt, call, tc.attempt, tc.call)
			}
		})
	}
}

// TestNewRejectsTimeoutsThatCannotWork: a negative timeout, an attempt
// timeout not shorter than the call's, or an idle timeout not shorter than
// the attempt's, is an error of New.
func TestNewRejectsTimeoutsThatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    RetryPolicy
		want string
	}{
		{"negative call", RetryPolicy{CallTimeout: -time.Second}, "call timeout -1s"},
		{"negative attempt", RetryPolicy{AttemptTimeout: -time.Second}, "attempt timeout -1s"},
		{"attempt equal to call", RetryPolicy{AttemptTimeout: time.Minute, CallTimeout: time.Minute}, "shorter than the call timeout"},
		{"attempt longer than call", RetryPolicy{AttemptTimeout: 2 * time.Minute, CallTimeout: time.Minute}, "shorter than the call timeout"},
		{"negative idle", RetryPolicy{IdleTimeout: -time.Second}, "idle timeout -1s"},
		{"idle equal to attempt", RetryPolicy{IdleTimeout: time.Minute, AttemptTimeout: time.Minute}, "shorter than the attempt timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Role: "planner", Dialect: DialectVLLM, Endpoints: []string{"http://127.0.0.1:1"}, Retry: tc.p})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "planner") {
				t.Errorf("New error %v, want one naming the role and %q", err, tc.want)
			}
		})
	}
}

// stallingServer accepts each request and never answers it: with
// headFirst it sends the status line and part of a body first. left is
// closed once a stalled request's context ends, which the server sees when
// the client closes the connection.
func stallingServer(t *testing.T, headFirst bool) (ts *httptest.Server, left <-chan struct{}) {
	t.Helper()
	gone := make(chan struct{})
	var once sync.Once
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices a client that went away only once the
		// request body is consumed.
		_, _ = io.Copy(io.Discard, r.Body)
		if headFirst {
			w.Header().Set("Content-Length", strconv.Itoa(len(okVLLM)))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(okVLLM[:20]))
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
		once.Do(func() { close(gone) })
	}))
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	return ts, gone
}

// TestStalledAttemptRetriedOnAnotherEndpoint: an attempt whose server
// accepted it and never answered (or stopped mid-answer) ends at the
// attempt timeout with its connection closed, counts as a timeout of that
// endpoint and is retried on the other one.
func TestStalledAttemptRetriedOnAnotherEndpoint(t *testing.T) {
	for _, headFirst := range []bool{false, true} {
		name := "no answer"
		if headFirst {
			name = "stalled mid-body"
		}
		t.Run(name, func(t *testing.T) {
			stalled, left := stallingServer(t, headFirst)
			healthy, _ := scripted(t, answer(200, okVLLM))
			// Long enough that the healthy server's answer fits in it on a
			// loaded machine (200ms did not, under -race at load 29).
			const attemptTimeout = time.Second
			rp := fastRetry()
			rp.AttemptTimeout, rp.CallTimeout = attemptTimeout, 30*time.Second
			met := NewMetrics()
			// The stalled server is first: with nothing outstanding the
			// pool picks it.
			c := mustClient(t, Config{Dialect: DialectVLLM, Endpoints: []string{stalled.URL, healthy.URL}, Retry: rp, Metrics: met, CaptureTokens: true})
			c.dialect.(*vllmDialect).mode.Store(vllmModern)
			start := time.Now()
			tr, err := c.Chat(context.Background(), Request{Messages: userMsg("hi"), TrajectoryKey: "t1"})
			elapsed := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Endpoint != healthy.URL || tr.Attempts != 2 {
				t.Errorf("served by %s after %d attempts, want %s after 2", tr.Endpoint, tr.Attempts, healthy.URL)
			}
			if elapsed < attemptTimeout || elapsed >= rp.CallTimeout {
				t.Errorf("call took %v, want at least the attempt timeout %v and less than the call timeout %v", elapsed, attemptTimeout, rp.CallTimeout)
			}
			select {
			case <-left:
			case <-time.After(rp.CallTimeout):
				t.Fatal("the stalled server never saw its client leave: the timed-out attempt's connection stayed open")
			}
			st := c.Pool().Status()
			if st[0].Failures != 1 || st[1].Failures != 0 {
				t.Errorf("pool %+v, want one failure on the stalled endpoint", st)
			}
			if got := counterValue(t, met.failures.WithLabelValues("default", stalled.URL, ClassTimeout)); got != 1 {
				t.Errorf("timeouts of the stalled endpoint %v, want 1", got)
			}
			// The trajectory now sticks to the endpoint that answered.
			tr, err = c.Chat(context.Background(), Request{Messages: userMsg("hi"), TrajectoryKey: "t1"})
			if err != nil || tr.Endpoint != healthy.URL || tr.Attempts != 1 {
				t.Errorf("next call of the trajectory: %v, %+v; want one attempt on %s", err, tr, healthy.URL)
			}
		})
	}
}

// TestAttemptTimeoutFollowsMaxTokens: without a fixed attempt timeout each
// call gets the one its completion cap derives.
func TestAttemptTimeoutFollowsMaxTokens(t *testing.T) {
	stalled, _ := stallingServer(t, false)
	rp := fastRetry()
	rp.MaxAttempts, rp.CallTimeout = 1, 0
	rp.AttemptTimeoutFor = func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	c := mustClient(t, Config{Dialect: DialectVLLM, Endpoints: []string{stalled.URL}, Retry: rp})
	start := time.Now()
	_, err := c.Chat(context.Background(), Request{Messages: userMsg("hi"), Sampling: &Sampling{MaxTokens: 150}})
	if !errors.Is(err, ErrAttemptTimeout) || !strings.Contains(err.Error(), "after 150ms") {
		t.Fatalf("err %v, want an attempt timeout after 150ms", err)
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("gave up after %v, before the attempt timeout", el)
	}
}
