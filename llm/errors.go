package llm

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error a call returns wraps one of these or is (or
// wraps) a *httpretry.StatusError (an answer other than 200, its text
// prefixed with the endpoint), *DecodeError, *GiveUpError or *FormatError,
// so callers can branch with errors.Is and errors.As.
var (
	// ErrAborted means the server reported finish_reason "abort": the
	// generation was cut by the engine (pause, weight sync, shutdown) and is
	// not a completed turn. Retrying can help.
	ErrAborted = errors.New("generation aborted by the server")
	// ErrAttemptTimeout means an attempt ran out of its attempt timeout
	// (RetryPolicy.AttemptTimeout): its connection was closed and, while
	// the call's deadline and attempts allowed, it was retried elsewhere.
	ErrAttemptTimeout = errors.New("attempt timed out")
	// ErrIdleTimeout means a streamed attempt received nothing for its idle
	// timeout (RetryPolicy.IdleTimeout): the server is taken for stalled,
	// the connection is closed and the call is retried at once, however
	// long the whole generation could legitimately take.
	ErrIdleTimeout = errors.New("stream idle")
	// ErrMissingTokenIDs means a response lacked prompt or completion token
	// ids the dialect promised.
	ErrMissingTokenIDs = errors.New("response has no token ids")
	// ErrLogprobMismatch means the number of sampler logprobs differs from
	// the number of completion tokens.
	ErrLogprobMismatch = errors.New("logprob count does not match token count")
	// ErrMalformedResponse means the body was not the JSON the dialect
	// returns: truncated, garbled, or of the wrong shape.
	ErrMalformedResponse = errors.New("malformed response body")
	// ErrHTMLResponse means the server (or a proxy in front of it) answered
	// with an HTML page instead of JSON.
	ErrHTMLResponse = errors.New("html page instead of json")
	// ErrStreamEnded means a server-sent-event stream closed before its
	// final event.
	ErrStreamEnded = errors.New("event stream ended early")
	// ErrTokensUnsupported means token capture was requested from the
	// openai dialect, which has no token data.
	ErrTokensUnsupported = errors.New("the openai dialect cannot capture token ids or logprobs")
	// ErrNoEndpoints means a role was configured without endpoints.
	ErrNoEndpoints = errors.New("no endpoints configured")
	// ErrPoolFull means the caller asked not to wait and every in-flight
	// slot was taken.
	ErrPoolFull = errors.New("in-flight limit reached")
)

// DecodeError is a 200 answer whose body could not be turned into a
// complete, consistent sample. It wraps one of ErrMalformedResponse,
// ErrHTMLResponse, ErrMissingTokenIDs, ErrLogprobMismatch, ErrStreamEnded or
// ErrAborted.
type DecodeError struct {
	// Endpoint is the base URL of the server, credentials redacted.
	Endpoint string
	// Err is the cause.
	Err error
	// Snippet is the start of the body (at most 200 bytes), for diagnosis.
	Snippet string
}

func (e *DecodeError) Error() string {
	if e.Snippet == "" {
		return fmt.Sprintf("%s: decode response: %v", e.Endpoint, e.Err)
	}
	return fmt.Sprintf("%s: decode response: %v (body starts %q)", e.Endpoint, e.Err, e.Snippet)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Retryable reports whether another attempt may succeed. Every decode
// failure the client knows of comes from a transient server or network
// condition (a dropped connection, a proxy page, an abort), so all are.
func (e *DecodeError) Retryable() bool { return true }

// GiveUpError is the error of a call that failed on every attempt it was
// allowed. It names the last endpoint tried (credentials redacted), the last
// HTTP status (0 when there was no answer) and the number of attempts.
type GiveUpError struct {
	Endpoint string
	Status   int
	Attempts int
	// Err is the last attempt's error.
	Err error
}

func (e *GiveUpError) Error() string {
	return fmt.Sprintf("llm call to %s gave up after %d attempt(s), last status %d: %v", e.Endpoint, e.Attempts, e.Status, e.Err)
}

func (e *GiveUpError) Unwrap() error { return e.Err }

// setAttempts makes a give-up count every HTTP attempt of a call whose
// dialect made several requests (a tokenize call, a fallback route).
func setAttempts(err error, attempts int) {
	var ge *GiveUpError
	if errors.As(err, &ge) {
		ge.Attempts = attempts
	}
}

// FormatError is a tool call the model wrote that could not be parsed. The
// agent loop reports it back to the model; Raw keeps the offending text.
type FormatError struct {
	// Index is the 0-based position of the bad block among the message's
	// <tool_call> blocks, or -1 when the message itself is unparseable.
	Index int `json:"index"`
	// Raw is the text of the bad block (or the whole content).
	Raw string `json:"raw"`
	// Reason says what is wrong, in words the model can act on.
	Reason string `json:"reason"`
}

// asFormatError returns err as a *FormatError, wrapping any other error.
func asFormatError(err error) *FormatError {
	var fe *FormatError
	if errors.As(err, &fe) {
		return fe
	}
	return &FormatError{Index: -1, Reason: err.Error()}
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("tool call %d: %s", e.Index, e.Reason)
}

// snippet returns the first bytes of body, for error messages.
func snippet(body []byte) string {
	const max = 200
	if len(body) > max {
		body = body[:max]
	}
	return string(body)
}
