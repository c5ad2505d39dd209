// Package llm is an offline stand-in for vLLM and SGLang inference servers:
// an HTTP server that speaks their OpenAI-compatible and native wire formats,
// including the fields RL trainers rely on, backed by a deterministic
// tokenizer, a Qwen-style ChatML template and a scripted stochastic policy
// (package policy) that really plays the synthetic web's research tasks.
// mgrpo uses it for tests, benchmarks and `mgrpo sim`; users can point their
// own agents at it to test them without a GPU.
//
// # Routes
//
// Both dialects serve POST /v1/chat/completions (stream or not),
// POST /v1/completions (prompt as text, token ids, or lists of either),
// GET /v1/models, GET /health and GET /metrics (Prometheus text: vllm:… or
// sglang:… names, labelled model_name, plus sim:injected_faults_total).
//
// Dialect "vllm" adds POST /tokenize, POST /detokenize and the control
// routes POST /sleep?level=N, POST /wake_up, GET /is_sleeping,
// POST /pause?mode=abort|wait|keep, POST /resume, GET /is_paused and
// POST /reset_prefix_cache. Generation requests that arrive while paused or
// asleep wait in the queue until /resume or /wake_up; /pause with mode abort
// (the default) ends running requests with finish_reason "abort".
//
// Dialect "sglang" adds POST /generate (text or input_ids, sampling_params,
// return_logprob, stream), POST /v1/tokenize, POST /v1/detokenize,
// GET /get_model_info, POST /update_weights_from_disk (model_path,
// weight_version) and GET /get_weight_version.
//
// # RL fields
//
// vLLM dialect, as vLLM ≥ 0.10.2: return_token_ids gives the top-level
// prompt_token_ids and choices[].token_ids (in streams, prompt_token_ids on
// the first chunk and each chunk's token ids); logprobs/top_logprobs give
// choices[].logprobs.content[] with token, logprob, bytes and top_logprobs;
// return_tokens_as_token_ids writes tokens as "token_id:N"; finish_reason,
// stop_reason (the matched stop string, null for EOS) and usage. Completion
// token ids end with the <|im_end|> id when the model stopped by itself.
//
// SGLang dialect: /generate returns text, output_ids (ending with the EOS id
// when stopped by it) and meta_info with id, finish_reason as an object
// ({"type":"stop","matched":…}, {"type":"length","length":…},
// {"type":"abort",…}), prompt_tokens, weight_version, output_token_logprobs
// as [logprob, token_id, text-or-null] triples, completion_tokens,
// cached_tokens and e2e_latency. The chat route takes the training
// extensions return_prompt_token_ids (choices[].prompt_token_ids) and
// return_meta_info (choices[].meta_info), and reports matched_stop.
//
// Temperature 0 is greedy and ignores every seed; a request seed makes
// sampling reproducible; without one, a per-server request counter is mixed
// in so repeated prompts differ while a sequential run replays exactly.
// Logprobs are synthetic but deterministic: the first token carries the log
// of the policy's probability for the choices the turn made.
//
// # Switches
//
// Config.ToolCallParser returns <tool_call> blocks as message.tool_calls
// with arguments as a JSON string and finish_reason "tool_calls" (vLLM's
// hermes parser); off, the raw blocks stay in content. Config.ReasoningParser
// moves the <think> block into reasoning_content (and vLLM's reasoning).
// Config.StripReasoning makes the template drop earlier turns' reasoning, as
// Qwen3's does, which breaks the property that a replayed conversation's
// prompt extends the previous prompt and completion. chat_template_kwargs
// {"enable_thinking": false} turns reasoning off per request.
//
// # Weight version
//
// The served weight version is reported on every response: SGLang in
// meta_info.weight_version (and the chat response's metadata.weight_version);
// both dialects in the X-Weight-Version response header, which is where the
// vLLM dialect reports it. Server.SetWeightVersion changes it in process.
//
// # Engine and faults
//
// Config.Slots sequences run at once, the rest queue (counted in the
// metrics); latency is TTFT + PerToken per further output token; a client
// disconnect cancels the work. Config.Faults injects, per generation request
// and from a seeded RNG, 500s, 503s, 429s with Retry-After, connections
// dropped mid-body, malformed JSON bodies and stalls.
//
// Bad input gets the status and error body the real server gives: vLLM
// {"error": {"message", "type", "param", "code"}}, SGLang's OpenAI routes
// {"object": "error", "message", "type", "param", "code"}, SGLang's /generate
// {"error": {"message"}}.
//
// # Independence
//
// The sim is a second implementation of the wire formats, not a mirror of
// the client's: it reads requests with encoding/json and writes responses
// with encoders of its own, and imports none of the project's client
// packages (agents, tools, rollout) nor their JSON fast paths
// (internal/jsonfast). A codec bug in the client then shows up as a failed
// test against the sim instead of being repeated by it. independence_test.go
// holds the sim to that.
package llm
