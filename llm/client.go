package llm

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	retryablehttp "github.com/hashicorp/go-retryablehttp"
	openai "github.com/sashabaranov/go-openai"
)

// Dialect names.
const (
	DialectVLLM   = "vllm"
	DialectSGLang = "sglang"
	DialectOpenAI = "openai"
)

// Config configures the client of one role.
type Config struct {
	// Role names the role in metrics and logs ("planner", "executor",
	// "judge", …).
	Role string
	// Dialect is "vllm", "sglang" or "openai".
	Dialect string
	// Model is the served model name sent in each request.
	Model string
	// Endpoints are the servers' base URLs (http://host:port, an optional
	// trailing /v1 is dropped).
	Endpoints []string
	// APIKey, when set, is sent as a bearer token. It never appears in
	// errors or logs.
	APIKey string
	// CaptureTokens requires prompt ids, completion ids and logprobs on
	// every turn; the openai dialect refuses it with ErrTokensUnsupported.
	CaptureTokens bool
	// Stream asks for chat completions as server-sent events (see
	// stream.go): vLLM's chat route with return_token_ids, SGLang's
	// native /generate (its chat route refuses token ids in streams).
	// Streamed attempts are bounded by Retry.IdleTimeout as well, so a
	// stalled server is told from a slow generation. A server whose
	// stream lacks token ids is called unstreamed from then on (see
	// Client.PreflightStream).
	Stream bool
	// Sampling holds the role's sampling parameters.
	Sampling Sampling
	Retry    RetryPolicy
	Pool     PoolConfig
	// HTTPClient supplies the transport (default: net/http's Transport
	// with idle connections for the pool's in-flight caps, see
	// defaultHTTPClient). Its Timeout is ignored: deadlines come from
	// Retry.
	HTTPClient *http.Client
	// Logger receives warnings and dialect detections (default: discard).
	Logger *slog.Logger
	// Metrics, when set, receives the role's counters and histograms.
	Metrics *Metrics
	// Parser reads completions the engine does not parse (token-id
	// prompts, SGLang's native route); "" is ParserFor(Model).
	Parser Parser
}

// Client calls one role's endpoints. It is safe for concurrent use; Close
// releases its background prober.
type Client struct {
	role     string
	model    string
	capture  bool
	parser   Parser
	sampling Sampling
	retry    RetryPolicy
	dialect  dialect
	pool     *Pool
	http     *retryablehttp.Client
	log      *slog.Logger
	met      *Metrics
	// stream is set while the client streams: Config.Stream, until a
	// server showed it cannot stream token ids.
	stream atomic.Bool
	// tools caches the encoding of the tool lists the client sends.
	tools toolsCache
	// ownHTTP is the HTTP client New made when Config.HTTPClient was nil;
	// Close closes its idle connections (a caller's client is theirs).
	ownHTTP *http.Client
	// apiKey is redacted from the servers' error messages.
	apiKey string
	// ends caches the probe renderings of the token path (tokens.go).
	ends endCounts
	// noTokens is set once the engine turned out to lack a token route:
	// calls then re-send whole conversations.
	noTokens atomic.Bool
}

// dialect is one server family's way of making a call and capturing its
// tokens.
type dialect interface {
	// chat performs req with sampling s and returns the filled turn
	// (without Endpoint, Latency and Attempts, which Chat sets). On error
	// the turn is the partial turn of the last attempt the server aborted,
	// or nil.
	chat(ctx context.Context, c *Client, req Request, s Sampling) (*Turn, *endpoint, int, error)
	// complete performs the raw completion req with sampling s, as chat
	// does a chat call (see Client.Complete).
	complete(ctx context.Context, c *Client, req CompletionRequest, s Sampling) (*Turn, *endpoint, int, error)
}

// New validates cfg and returns a client. Configuration errors are
// returned; nothing is contacted until the first call.
func New(cfg Config) (*Client, error) {
	if cfg.Role == "" {
		cfg.Role = "default"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Retry.validate(); err != nil {
		return nil, fmt.Errorf("llm role %s: %w", cfg.Role, err)
	}
	parser := cfg.Parser
	if parser == "" {
		parser = ParserFor(cfg.Model)
	} else if _, err := ParseParser(string(parser)); err != nil {
		return nil, fmt.Errorf("llm role %s: %w", cfg.Role, err)
	}
	c := &Client{
		role: cfg.Role, model: cfg.Model, capture: cfg.CaptureTokens, parser: parser,
		sampling: cfg.Sampling, retry: cfg.Retry.withDefaults(), log: log, met: cfg.Metrics,
	}
	switch strings.ToLower(cfg.Dialect) {
	case DialectVLLM:
		c.dialect = &vllmDialect{}
	case DialectSGLang:
		c.dialect = &sglangDialect{}
	case DialectOpenAI:
		if cfg.CaptureTokens {
			return nil, fmt.Errorf("llm role %s: %w", cfg.Role, ErrTokensUnsupported)
		}
		c.dialect = openaiDialect{}
		// Without token capture there is nothing a stream must keep; the
		// openai dialect stays unstreamed.
		cfg.Stream = false
	default:
		return nil, fmt.Errorf("llm role %s: unsupported dialect %q (want vllm, sglang or openai)", cfg.Role, cfg.Dialect)
	}
	c.stream.Store(cfg.Stream)
	base := cfg.HTTPClient
	if base == nil {
		base = defaultHTTPClient(cfg.Pool.withDefaults(len(cfg.Endpoints)))
		c.ownHTTP = base
	}
	pool, err := NewPool(cfg.Role, cfg.Endpoints, cfg.Pool, base, log, cfg.Metrics)
	if err != nil {
		return nil, err
	}
	c.pool = pool
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.apiKey = cfg.APIKey
	c.http = &retryablehttp.Client{
		HTTPClient: &http.Client{Transport: &transport{
			pool: pool, base: rt, apiKey: cfg.APIKey, role: cfg.Role,
		}},
		ErrorHandler: func(resp *http.Response, err error, _ int) (*http.Response, error) {
			if resp != nil && resp.Body != nil {
				resp.Body.Close()
			}
			return nil, err
		},
	}
	c.retry.policy().Configure(c.http)
	return c, nil
}

// Tuning of the HTTP client New makes when Config.HTTPClient is nil.
const (
	// idleConnTimeout is how long an idle keep-alive connection is kept.
	// uvicorn, which serves vLLM's and SGLang's HTTP APIs, closes
	// keep-alive connections after 5 s idle by default
	// (--timeout-keep-alive); closing ours after 4 s leaves a second of
	// margin, so a request rarely lands on a connection the server is
	// closing or has closed.
	idleConnTimeout = 4 * time.Second
	// writeBufferSize sizes each connection's write buffer while the
	// role's calls in flight are few enough (see writeBufferFor). A
	// request carries the whole conversation (8 KB and more); through
	// net/http's default 4 KiB buffer it went out in two or three writes,
	// through 32 KiB in one (BenchmarkChat at 8 KB: about 7% less CPU per
	// call). The read buffer stays at net/http's 4 KiB: the client reads a
	// body of known length straight into a buffer of that size, past the
	// read buffer, and 64 KiB made no difference. A connection holds both
	// for its whole life, so they count once per call in flight.
	writeBufferSize = 32 << 10
	// minWriteBufferSize is net/http's default write buffer, the floor.
	minWriteBufferSize = 4 << 10
	// writeBufferBudget bounds what the write buffers of a role's
	// connections hold in all: at 1,024 calls in flight (the pool's
	// default per endpoint) each still gets writeBufferSize, at 8,000 (the
	// farm at 10,000 rollouts) each gets the floor, 31 MiB instead of
	// 250 MiB, for a second write of a long request.
	writeBufferBudget = 32 << 20
	// maxIdleConns caps the idle-connection limits derived from the
	// pool's in-flight caps, which may be set very large.
	maxIdleConns = 1 << 16
)

// defaultHTTPClient returns the HTTP client New uses without
// Config.HTTPClient: net/http's Transport, with as many idle connections
// per host as the pool lets calls be in flight to one endpoint (and in
// all as to the role), so a steady load reuses its connections instead of
// dialling; idle connections closed after idleConnTimeout; proxies taken
// from HTTP_PROXY, HTTPS_PROXY and NO_PROXY; HTTP/2 where an https
// endpoint offers it; and a write buffer that sends a long conversation
// in one write (see writeBufferSize). Plain http:// endpoints are spoken
// to over HTTP/1.1, one connection per call in flight.
func defaultHTTPClient(pc PoolConfig) *http.Client {
	return &http.Client{Transport: defaultTransport(pc)}
}

// defaultTransport returns defaultHTTPClient's transport. The dialer and
// the TLS and 100-continue timeouts are http.DefaultTransport's.
func defaultTransport(pc PoolConfig) *http.Transport {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          int(min(pc.MaxInFlight, maxIdleConns)),
		MaxIdleConnsPerHost:   int(min(pc.MaxInFlightPerEndpoint, maxIdleConns)),
		IdleConnTimeout:       idleConnTimeout,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		WriteBufferSize:       writeBufferFor(pc.MaxInFlight),
	}
}

// writeBufferFor returns the write buffer of each connection of a role
// with at most inFlight calls in flight, one connection each:
// writeBufferSize while their buffers fit writeBufferBudget, else the
// budget's share, never below minWriteBufferSize. The buffer only saves
// writes of long requests, so many connections are worth a few more
// writes rather than 32 KiB each.
func writeBufferFor(inFlight int64) int {
	if inFlight <= 0 || inFlight <= writeBufferBudget/writeBufferSize {
		return writeBufferSize
	}
	return int(max(writeBufferBudget/inFlight, minWriteBufferSize))
}

// Close stops the pool's prober and closes the idle connections of the
// HTTP client New made (not those of a Config.HTTPClient). It is
// idempotent.
func (c *Client) Close() {
	c.pool.Close()
	if c.ownHTTP != nil {
		c.ownHTTP.CloseIdleConnections()
	}
}

// Pool returns the client's endpoint pool.
func (c *Client) Pool() *Pool { return c.pool }

// Role returns the role name.
func (c *Client) Role() string { return c.role }

// Chat performs one chat call: it routes, retries within the role's
// RetryPolicy and its timeouts for the call's completion cap (see
// RetryPolicy.Timeouts), and returns the Turn with its tokens. A failed
// call returns a *GiveUpError wrapping the last cause (a *httpretry.StatusError, a
// *DecodeError, a transport error or the context's error). An attempt the
// server aborted (finish_reason "abort": a pause for a weight update, an
// engine abort) is retried like a failed one; when no later attempt
// finishes, the failed call returns, with its error, the partial Turn of
// the last aborted attempt (Turn.Abort set, FinishReason "abort") so that
// its tokens and logprobs are not lost. Otherwise the Turn is nil on error.
// It is safe for concurrent use.
func (c *Client) Chat(ctx context.Context, req Request) (*Turn, error) {
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("llm role %s: chat: no messages", c.role)
	}
	if req.Tokens != nil && c.tokensSupported() {
		return c.chatTokens(ctx, req)
	}
	return c.call(ctx, req.Sampling, func(ctx context.Context, s Sampling) (*Turn, *endpoint, int, error) {
		return c.dialect.chat(ctx, c, req, s)
	})
}

// exchange is one call's dialect work: the request made with sampling s,
// its turn (without Endpoint, Latency and Attempts), the endpoint of its
// last attempt and the attempt count. On error the turn is the partial
// turn of the last attempt the server aborted, or nil.
type exchange func(ctx context.Context, s Sampling) (*Turn, *endpoint, int, error)

// call is the path every model call takes, whatever its route and body
// (Chat, Complete): the role's sampling merged with the call's override,
// the call and attempt timeouts for its completion cap, the role's
// in-flight slot, then the exchange; the turn gets its endpoint, attempts,
// latency and sampling record, token capture is enforced, and the metrics
// and the adaptive limiter see the call.
func (c *Client) call(ctx context.Context, override *Sampling, do exchange) (*Turn, error) {
	start := time.Now()
	s := c.sampling.merge(override)
	attempt, call := c.retry.Timeouts(s.MaxTokens)
	ctx, cancel := context.WithTimeout(ctx, call)
	defer cancel()
	ctx = withAttemptTimeout(ctx, attempt)
	if err := c.pool.global.Acquire(ctx, 1); err != nil {
		return nil, &GiveUpError{Endpoint: "<no endpoint>", Err: fmt.Errorf("wait for an in-flight slot: %w", err)}
	}
	defer c.pool.global.Release(1)
	slotAt := time.Now()
	turn, e, attempts, err := do(ctx, s)
	if err != nil {
		if !turn.Partial() {
			return nil, err
		}
		turn.Endpoint, turn.Attempts, turn.Latency = e.display, attempts, time.Since(start)
		turn.Sampling = c.sampling.overridden(override)
		return turn, err
	}
	turn.Endpoint, turn.Attempts, turn.Latency = e.display, attempts, time.Since(start)
	turn.Sampling = c.sampling.overridden(override)
	if c.capture && !turn.HasTokens() {
		return nil, &GiveUpError{Endpoint: e.display, Status: http.StatusOK, Attempts: attempts, Err: ErrMissingTokenIDs}
	}
	c.met.success(c.role, e.display, turn)
	c.pool.auto.observeCall(time.Since(slotAt), len(turn.CompletionIDs))
	return turn, nil
}

// Sequences assembles a trajectory's turns (see the package function) and
// counts its drift events in the role's metrics.
func (c *Client) Sequences(turns []*Turn) ([]Sequence, []Drift, error) {
	seqs, drifts, err := Sequences(turns)
	if err == nil {
		c.met.Drift(c.role, len(drifts))
	}
	return seqs, drifts, err
}

// chatRequest builds the common part of a chat body.
func (c *Client) chatRequest(req Request, s Sampling) ChatRequest {
	r := ChatRequest{ChatCompletionRequest: openai.ChatCompletionRequest{
		Model: c.model, Messages: req.Messages, Tools: req.Tools,
		MaxTokens: s.MaxTokens, Stop: s.Stop, ChatTemplateKwargs: s.ChatTemplateKwargs,
	}}
	r.Temperature, r.TopP, r.TopK, r.Seed = s.Temperature, s.TopP, s.TopK, s.Seed
	r.MinP, r.RepetitionPenalty = s.MinP, s.RepetitionPenalty
	r.PresencePenalty, r.FrequencyPenalty = s.PresencePenalty, s.FrequencyPenalty
	return r
}

// finishTurn fills the message-derived fields of t: tool calls from the
// server or parsed from Hermes blocks in the content.
func finishTurn(t *Turn) {
	if t.Message.Role == "" {
		t.Message.Role = openai.ChatMessageRoleAssistant
	}
	if len(t.Message.ToolCalls) > 0 {
		t.ToolCalls = t.Message.ToolCalls
		return
	}
	if strings.Contains(t.Message.Content, toolCallOpen) {
		res, err := ParseHermes(t.Message.Content)
		t.ToolCalls = res.Calls
		if err != nil {
			t.ToolCallError = asFormatError(err)
		}
	}
}
