// Package llm is mgrpo's token-exact inference client for vLLM, SGLang and
// other OpenAI-compatible servers.
//
// A Client serves one role (planner, executor, judge …). Chat sends one
// conversation to an endpoint of the role's Pool and returns a Turn: the
// assistant message plus the prompt token ids, the sampled token ids and
// one sampler logprob per sampled token, exactly as the engine produced
// them. The ids are never re-tokenized from text. Sequences then assembles a
// trajectory's turns into training sequences with a loss mask that is 1
// exactly on sampled tokens; turns merge while each prompt extends the
// previous prompt and completion, and a Drift is reported where the chat
// template broke that prefix. Because of that prefix, a caller that passes
// one PromptPrefix per trajectory in Request.Prefix lets the client copy
// what the previous call already produced instead of redoing it: the JSON
// of the leading messages still equal, field by field, to the previous
// request's, and the prompt ids the previous prompt already had (the
// request bytes and the results are the same without it).
//
// Complete is Chat's counterpart for a prompt the caller rendered itself:
// a raw completion (text or token ids, no chat template) on vLLM's
// /v1/completions with return_token_ids, or SGLang's /generate from
// input_ids (a text prompt tokenized first by the same server's
// /v1/tokenize). It takes the same call path: routing, retries, timeouts,
// aborts, token capture and metrics.
//
// # Dialects
//
//   - "vllm": /v1/chat/completions with return_token_ids, logprobs and
//     top_logprobs 0. A server older than vLLM 0.10.2 ignores
//     return_token_ids; the first call detects that, logs it, and from
//     then on the client reads completion ids from "token_id:N" logprob
//     tokens (return_tokens_as_token_ids) and prompt ids from /tokenize.
//   - "sglang": the chat route with return_prompt_token_ids and
//     return_meta_info; for servers without those, /v1/tokenize plus the
//     native /generate with return_logprob, reasoning and Hermes tool calls
//     parsed client-side.
//   - "openai": any OpenAI-compatible API, without token data. A client
//     configured with CaptureTokens refuses it with ErrTokensUnsupported.
//
// # Wire types
//
// Messages, tools, tool calls and responses are github.com/sashabaranov/
// go-openai types, so agents and judges share one vocabulary with the rest
// of the Go ecosystem. Two of its behaviours are wrong for RL: its response
// types drop fields they do not declare (prompt_token_ids, token_ids,
// meta_info, stop_reason, vLLM's "reasoning"), and its request type tags
// temperature and top_logprobs omitempty, so temperature 0 (greedy
// evaluation) would silently become the server's default. ChatRequest,
// ChatResponse, ChatChoice and ChatMessage therefore embed the go-openai
// types and add or shadow exactly those fields, instead of re-declaring the
// whole schema.
//
// Decoding those types with encoding/json cost most of a call's CPU: a
// token-capturing answer is mostly thousands of prompt ids and one logprob
// object per sampled token. The dialects therefore read responses with a
// small strict scanner (fastdecode.go) that parses the id arrays and
// logprob values directly, skips what they never read (bytes, an empty
// top_logprobs), decodes the usual shapes of the other members (message,
// tool calls, usage) itself and gives unusual ones to encoding/json as
// small objects. On any body it is not sure of it steps aside and
// encoding/json decodes the whole body, so results and errors are exactly
// those of DecodeChatResponse; a fuzz test holds the two to that. Metrics
// count every fallback to encoding/json by reason
// (mgrpo_llm_decode_fallback_total, see FallbackSyntax); answers shaped as
// vLLM and SGLang send them for the dialects' requests (testdata/servers)
// are taken whole. A streamed answer's events go through decoders of the
// same kind (stream_fastdecode.go), event by event, with the same fallback
// and counting. Requests are encoded to json.Marshal's exact bytes
// without re-compacting each message (encode.go).
//
// # Reliability
//
// Each attempt is routed by the Pool (least outstanding requests, a
// trajectory sticking to its endpoint while healthy, ejection after
// consecutive failures, re-admission by a /health probe or a success,
// optional weighting by the server's waiting queue, per-endpoint and
// per-role in-flight caps). go-retryablehttp runs the attempts: connection
// errors, 429 and 5xx are retried, Retry-After is honoured, backoff is
// jittered exponential, attempts and the call's duration are bounded, and
// a cancelled context ends a wait at once. Every attempt has a timeout and
// every call a deadline, both finite: by default an attempt gets 60 s plus
// 100 ms per completion token the request allows (a decode rate of 10
// tokens/s, the low end of a loaded server's, so a slow live generation is
// not cut) and a call three attempts' worth (RetryPolicy.Timeouts). An
// attempt that runs out is abandoned with its connection closed, which
// makes vLLM and SGLang abort the generation; it counts as a failure of
// its endpoint and is retried on another one where the pool has one. A
// 200 whose body is truncated,
// an HTML page, an event stream, or lacks token ids or has a logprob count
// that does not match is a *DecodeError and is retried too; a call that
// runs out of attempts returns a *GiveUpError naming the endpoint
// (credentials redacted), the last status and the attempts.
//
// Without Config.HTTPClient, the client speaks through net/http's
// Transport: HTTP/1.1 to http:// endpoints, with one connection per call in
// flight and as many idle connections per endpoint as the pool lets calls
// be in flight to it, so a steady load reuses connections instead of
// dialling; HTTP/2 to https:// endpoints that offer it; proxies from
// HTTP_PROXY, HTTPS_PROXY and NO_PROXY. An idle connection is closed after
// 4 s, before the 5 s after which uvicorn, under vLLM and SGLang, closes
// it, and a request whose reused connection turns out to have been closed
// by the server is sent again on another one (inference requests are
// marked idempotent, which they are for the server's state).
//
// A generation the server aborted (finish_reason "abort", or SGLang's
// meta_info.finish_reason type "abort": a pause for a weight update, an
// engine abort) is a failed attempt and is retried, since the retry
// generates the whole turn again; but its tokens are not thrown away: when
// no later attempt finishes, Chat returns the last aborted attempt's
// partial Turn (Turn.Abort set, FinishReason "abort", the prompt ids and
// the completion ids and logprobs generated before the abort) together
// with its error, for a caller to record or continue. A partial turn is
// never a finished one.
//
// # Streaming
//
// With Config.Stream a client receives chat completions as server-sent
// events, and every streamed attempt is also bounded by an idle timeout
// (RetryPolicy.IdleTimeout, 60 s by default): a stream that sends nothing
// for that long is a stall, ended with its connection closed and retried at
// once like a timed-out attempt, while a live one may run for its whole
// attempt timeout. vLLM streams on the chat route with return_token_ids:
// the first chunk carries prompt_token_ids, every chunk the token_ids and
// logprob entries of its delta, the last one the finish and stop reasons,
// and a trailing chunk the usage (stream_options.include_usage). SGLang's
// chat route refuses return_prompt_token_ids and return_meta_info on a
// stream, so a streaming SGLang client tokenizes with /v1/tokenize and
// streams the native /generate, whose events carry the output ids and
// meta_info with the output logprobs (cumulative by default, incremental
// with SGLang's incremental_streaming_output; both are read), and parses
// reasoning and Hermes tool calls itself as on the native route. The
// chunks are assembled into the Turn the unstreamed answer gives (the same
// message, tool calls, finish reason, ids, logprobs and usage). A stream
// cut before its end (idle, timed out, dropped, no [DONE]) keeps its
// tokens as a partial Turn (Abort.By AbortedByClient) for when no retry
// finishes; malformed events are *DecodeErrors and retried like a
// malformed answer. A server whose stream carries no token ids (vLLM
// before 0.10.2) is called unstreamed from then on, with a warning;
// Client.PreflightStream finds that out before a run starts. Without
// Config.Stream an event-stream answer is a decode error.
package llm
