// Package trainer is an offline stand-in for a Tinker-compatible training
// service: an HTTP server of the Tinker REST API (as Thinking Machines' SDK
// and SkyRL's server have it) that really trains a small parametric Policy,
// so that the project's trainer bridge and training loop can be checked end
// to end without a GPU, and that the silent bugs of RL pipelines (a token
// scored differently by trainer and sampler, an advantage on the wrong
// trajectory, a step that never reaches the weights) show up as numbers.
//
// # Routes
//
// Under /api/v1: GET get_server_capabilities (Config.BaseModels) and
// healthz; POST client/config (the SDK's first request: its flags, with
// the forward_backward limits Config.ChunkDatums and Config.ChunkBytes,
// and pjwt_auth_enabled when Config.JWTLifetime is set), auth/token (in
// that JWT mode: the API key traded for a short-lived JWT, which every
// other route then wants in X-API-Key), telemetry (accepted and dropped), create_session, session_heartbeat (a
// session expires Config.SessionTTL after its last beat), create_model (a
// model per request, of a served base model; the LoRA rank is recorded
// only; a replay of a session's model_seq_id answers the same model),
// get_info, weights_info {tinker_path}, and the sequenced routes forward,
// forward_backward, optim_step, save_weights, load_weights and
// save_weights_for_sampler, which answer a future {request_id, model_id}
// resolved through POST retrieve_future. A long poll that runs out after
// Config.PollTimeout answers 408 or 200 {"type": "try_again"}
// (Config.PollAnswer). Errors are {"detail": …}; a failed future is the
// SDK's {error, category}. GET training_runs (limit, offset),
// training_runs/ID, training_runs/ID/checkpoints and models/ID/checkpoints
// list the models and their saves as the SDK's TrainingRun and Checkpoint.
// get_info names the policy's tokenizer (model_data.tokenizer_id) when it
// is a TokenizerNamer.
//
// The sampling routes (sampling.go), for a policy that is a Sampler:
// create_sampling_session {session_id, sampling_session_seq_id,
// model_path | base_model} fixes a sampling session's weights (a
// save_weights_for_sampler's, a saved state's or a base model's initial
// ones), and asample {sampling_session_id, seq_id, num_samples, prompt,
// sampling_params, prompt_logprobs} answers a future {request_id,
// sample_sequence_ids} of the SDK's SampleResponse (protobuf to a poll that
// accepts it); sample answers the same at once. The samples' logprobs are
// those forward recomputes for the same tokens; a seed makes them repeat.
//
// forward_backward takes JSON, or the SDK's protobuf ForwardBackwardRequest
// (Content-Type application/x-protobuf; its forward_only makes it a
// forward); a poll whose Accept names application/x-protobuf gets a
// forward_backward's or forward's result as a protobuf
// ForwardBackwardOutput (one ArrayRecord of float32 BatchedTensors), any
// other result and every failure as JSON. The sim decodes and encodes the
// protobuf with its own code (proto.go). Compressed bodies are 415.
//
// save_weights (the SDK's save_state) keeps the parameters and the Adam
// state under tinker://MODEL/weights/NAME (and in
// CheckpointDir/MODEL/weights/NAME.json when there is a CheckpointDir), so
// that load_weights {path, optimizer} can put them into another model,
// even after a restart: the SDK resumes a run that way. A save without a
// path is named after its seq_id (save_weights_for_sampler's too, as
// save_weights_and_get_sampling_client sends none).
//
// # Sequencing
//
// A model's sequenced requests carry seq_id 1, 2, 3, …; each runs once all
// earlier ones have run (a later one waits in the queue). A seq_id seen
// before with the same route and body (compared after decoding, so key
// order and spacing do not matter) answers the original future; another
// body is 409. A request the server can read but refuses (a bad datum,
// loss, path or Adam parameter) takes its seq_id all the same and answers
// a future that fails with category "user": the SDK numbers its requests
// as it makes them and never sends a refused one again, so the queue must
// not wait for it. A model's futures are kept until Config.KeptSteps later
// steps (each ended by save_weights_for_sampler) have saved, so a
// restarted client's replays of its last steps find them; older ones are
// let go, and retrieving one, or replaying its seq_id, is 410.
//
// # Training
//
// A datum's sequence is its model input's tokens plus the last target;
// target j must be token j+1 (else 400 "targets misaligned", naming the
// datum and index), and every loss_fn_input has one value per input token,
// target_tokens int64, the rest float32. A datum without weights trains
// where its advantages are non-zero (on every target when it has none). forward_backward scores every
// sequence under the model's parameters with Policy.Score, applies the
// loss — importance_sampling −Σ w·r·A with r = exp(trainer − sampler
// logprob), ppo −Σ w·min(r·A, clip(r, low, high)·A) with loss_fn_config's
// clip_low_threshold and clip_high_threshold (0.8 and 1.2 by default), or
// cross_entropy −Σ w·logprob — and adds its gradient to the model's, which
// optim_step applies with AdamW (bias correction, decoupled weight decay,
// global-norm clipping) and clears. forward reports the same without a
// gradient. save_weights_for_sampler writes the parameters with Policy.Save
// to Config.CheckpointDir/MODEL/NAME.json and answers
// tinker://MODEL/sampler_weights/NAME.
//
// forward_backward reports, with Tinker's reduction suffixes: loss:sum;
// weighted_tokens:sum; clip_fraction:mean (weighted targets whose ratio
// lies outside ppo's thresholds); logprob_diff_abs:mean and :max (|trainer
// − sampler| over weighted targets: 0 when trainer and sampler agree);
// unmatched_tokens:sum (weighted targets in runs the policy cannot
// produce, left out of the loss); advantage_order_violations:sum (pairs of
// datums of one group, among those of the optimizer step so far, whose
// rewards as the policy reads them are ordered one way and whose mean
// advantages over their weighted targets are not ordered the same way).
// loss_fn_outputs holds each datum's recomputed logprobs and elementwise
// loss per target; a target of weight 0 is not scored (the policy may be
// unable to produce prompt or tool text) and has logprob 0 there, where
// Tinker gives every target's.
//
// State is in memory for the server's life. A forward_backward's future
// holds its per-target outputs; Config.KeptSteps bounds how many steps'
// futures are held, so a long run's memory does not grow with its steps.
//
// # Faults
//
// Config.Faults injects, from a seeded RNG, 500s, 503s, 429s with
// Retry-After, answers cut mid-body after the request took effect, and
// futures that expire once (the first retrieve is 410, and the request
// sent again with its seq_id answers the same future), every one a fault
// the SDK's own retries get through. client/config and telemetry are
// never faulted.
//
// # Independence
//
// The package imports none of the project's client packages: it reads and
// writes the wire format with types of its own.
package trainer
