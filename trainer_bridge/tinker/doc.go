// Package tinker is the trainer backend for Tinker-compatible REST
// services: Thinking Machines' Tinker API and open-source servers of the
// same API such as SkyRL's. Importing it registers the URL schemes
// tinker+http and tinker+https with trainerbridge.Open.
//
// # Wire format
//
// Start first sends POST client/config {sdk_version}, the SDK's first
// request, and follows its answer: its forward_backward limits, with the
// flags it does not know logged once. Against a server that answers it,
// forward_backward goes as the SDK sends it, a protobuf
// tinker_public.ForwardBackwardRequest (package tinkerpb, Content-Type
// application/x-protobuf), and its future is polled with Accept
// application/x-protobuf, application/json: a protobuf ForwardBackwardOutput
// or, from an older server, JSON. A server without client/config (404, as
// SkyRL's), or one that refuses a protobuf body with 415, is sent JSON. The
// API key is read from the environment variable Options.APIKeyEnv
// (TINKER_API_KEY by default) when the trainer is made and sent in the
// X-API-Key header, as the SDK sends it; it is never logged or put in an
// error (errors pass through redact.Secrets with the key). When
// client/config says pjwt_auth_enabled, the key is traded at POST
// auth/token for a short-lived JWT, which then goes in X-API-Key instead
// and is traded again before it expires (jwt.go); the JWT is redacted as
// the key is. sdk_version is
// "mgrpo/" and mgrpo's version, never a version of the SDK's.
//
// Every route is under BASE/api/v1, BASE being the URL with the scheme's
// "tinker+" dropped (a path prefix is kept). Start sends
//
//	GET  get_server_capabilities  the served base models: an unknown one is ErrUnknownModel
//	POST create_session           {tags, user_metadata, sdk_version, type}
//	POST session_heartbeat        {session_id, type}, every 10 s until Close
//	POST create_model             {session_id, model_seq_id, base_model, user_metadata,
//	                               lora_config: {rank, seed, train_unembed, train_mlp, train_attn}, type}
//	POST get_info                 {model_id, type}, instead of create_model when resuming
//	                               against a server without client/config
//	POST load_weights             {model_id, path, optimizer: true, seq_id: 1, type}, after
//	                               create_model when resuming from a saved state
//
// and Train, for one batch,
//
//	POST forward_backward         protobuf ForwardBackwardRequest, or JSON
//	                               {forward_backward_input: {data: [Datum], loss_fn, loss_fn_config}, model_id, seq_id}
//	POST optim_step               {adam_params: {learning_rate, beta1, beta2, eps, weight_decay, grad_clip_norm},
//	                               model_id, seq_id, type}
//	POST save_weights             {model_id, path, seq_id, type}: the SDK's save_state, on servers
//	                               with client/config, answering tinker://MODEL/weights/NAME
//	POST save_weights_for_sampler {model_id, path, seq_id, type}, answering a tinker:// path
//
// A Datum is {model_input: {chunks: [{type: "encoded_text", tokens}]},
// loss_fn_inputs: {target_tokens, weights, logprobs, advantages}}, each
// input a TensorData {data, dtype, shape} (int64 targets, float32 for the
// rest). The token shift: the model reads the sample's tokens but the last
// and predicts its tokens but the first; target j is token j+1, and its
// weight is token j+1's loss mask, its logprob the sampler's logprob of
// token j+1, its advantage the sample's advantage times that mask. A
// sample of fewer than two tokens has no target (the executors' one-token
// padding samples are such) and a sample with no target under the mask
// adds nothing to the loss: both are skipped and counted (MetricSkippedShort,
// MetricSkippedNoLoss), not errors, since alignment makes padding by design.
//
// The loss is importance_sampling (no loss_fn_config) or ppo with
// loss_fn_config {clip_low_threshold: 1-ClipLow, clip_high_threshold:
// 1+ClipHigh}: thresholds on the probability ratio, not offsets.
//
// Every call but the first two of Start answers a future {request_id},
// resolved by long-polling POST retrieve_future {request_id}: a 200 with
// type "try_again" or a 408 polls again; a 410 sends the request again
// (same body, same seq_id); 429 and 5xx but 501 back off (Config.Backoff,
// honouring Retry-After) and retry; a 409 is retried three times, as the
// SDK's HTTP layer retries it, unless the answer says X-Should-Retry:
// false; a 200 with error (and category), or a 4xx with a detail, is
// ErrRejected carrying the server's text; retries used up are
// ErrUnavailable. forward_backward requests hold at most client/config's
// fwdbwd_max_chunk_len datums and fwdbwd_max_chunk_bytes_count bytes of
// body (1,024 and 5,000,000 without it, the SDK's defaults; the SDK
// estimates the size, the bridge measures the body); a datum bigger than
// that goes alone. A step's metrics are the
// forward_backward metrics folded over its requests by their reduction
// suffix (":sum" added, ":mean" weighted by datums, ":min", ":max"), the
// optim_step metrics (prefixed "optim_step/" where a name is taken), and
// the bridge's own mgrpo/… counts.
//
// # Sequence numbers and idempotency
//
// All requests of a model carry seq_id 1, 2, 3, … in the order sent, the
// SDK's numbering; servers run them in that order and answer a request
// whose (model, seq_id) they have seen, with the same body, with the
// original future (a different body is a 409, reported as ErrRejected).
// A step of n forward_backward requests takes seq_ids SeqID+1 … SeqID+n,
// then SeqID+n+1 for optim_step, SeqID+n+2 for save_weights (on servers
// with client/config) and the next for save_weights_for_sampler, SeqID
// being the State's: the last seq_id of the last completed step.
// The split into requests and every body are functions of the batch, the
// loss, the model id and SeqID only (the weights' name is the batch's
// IdempotencyKey), so sending a step again sends the very same requests.
// optim_step is sent only once every forward_backward of the step has
// succeeded, so a rejected batch never reaches the optimizer (its
// accumulated gradients do stay on the server, and the run stops).
//
// What the caller must keep: State (ResumeState's JSON), written in the
// same store transaction that marks a step done, and the step's samples
// until then. After a crash at any point it restores the State (Resume,
// before Start) and calls Train again with the same batch: a step that the
// server completed is answered from its futures, a step cut short is
// finished, none is trained twice. A batch of the last completed step is
// answered from the State alone. A restarted trainer opens a new session
// and resumes as the SDK does: a fresh model, into which the State's last
// saved state (StatePath: weights and optimizer) is loaded, so the
// interrupted step trains once, from the last completed step, on the new
// model. Against a server without client/config it reuses the State's
// model instead (checked with get_info) and replays the step's seq_ids; if
// the model is gone (the server lost it) Start fails rather than training
// a fresh one.
// If the caller cannot replay the same samples for an interrupted step,
// the server's 409 stops the run: the step's partial gradients cannot be
// told apart from the new ones.
//
// SkyRL records a save_weights_for_sampler checkpoint before looking its
// seq_id up, so a replayed save is a 409 "already exists" there; the
// bridge takes that as the save having happened and returns SkyRL's path
// for it, tinker://MODEL/sampler_weights/NAME.
//
// # Sources checked
//
// docs/trainers.md lists the SDK release each wire fact was read from.
// Every JSON field was checked against the Tinker Python SDK
// (thinking-machines-lab/tinker: src/tinker/types/ — create_session_request,
// create_model_request, lora_config, datum, model_input, encoded_text_chunk,
// tensor_data, forward_backward_input, forward_backward_request,
// forward_backward_output, optim_step_request, optimizer (AdamParams with
// weight_decay and grad_clip_norm), optim_step_response,
// save_weights_for_sampler_request and _response, future_retrieve_request,
// try_again_response, request_failed_response, request_error_category,
// get_server_capabilities_response, get_info_request and _response,
// session_heartbeat_request, shared/untyped_api_future; the routes in
// src/tinker/resources/; the header in _client.py; polling in
// lib/api_future_impl.py; seq_ids and chunking in
// lib/public_interfaces/training_client.py; metric reduction in
// lib/chunked_fwdbwd_helpers.py) and SkyRL's server
// (NovaSky-AI/SkyRL: skyrl/tinker/api.py). Where they differ the bridge
// follows the SDK and stays within what SkyRL takes: SkyRL's LoRA config
// reads rank and seed only, its TensorData data only, its AdamParams no
// grad_clip_norm (the extra fields are ignored by its models); it names
// the model in create_model's first answer (taken when the future's result
// lacks it); it reports a failed future as a 400 with detail rather than a
// 200 with error (both handled); its get_info answers model_data.base_model
// where the SDK has model_data.model_name (both read).
package tinker
