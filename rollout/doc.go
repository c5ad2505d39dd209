// Package rollout is the pure M-GRPO layer: it turns groups of finished
// rollouts into training data. It computes the M-GRPO rewards, the
// hierarchical group-relative advantages and the alignment of each rollout's
// executor trajectories to a fixed count d̄, builds token-level Samples and
// writes them, with per-query statistics and step summaries, to step
// directories. It also defines the values that cross process boundaries: the
// unit of work ([RolloutTask]), [Sample], [QueryStats], [StepSummary] and
// the inspection record of a rollout ([RolloutRecord], one line of
// rollouts.jsonl, with its tree as [TreeRecord] and its [RolloutScores]).
//
// Everything here works on plain values (rewards, counts, token sequences)
// and imports nothing of the agents, the model client or the tools, so the
// shared store and the trainer bridge can depend on it. The runtime that
// runs the agents and converts their trajectories into these values is
// package farm.
//
// # Rewards
//
// The planner's reward is R_M = α1·r_format + α2·r_correct, and 0 when the
// planner's format is invalid. An executor's reward is
// R_S = β1·r_format + β2·r_correct_main + β3·r_expert, and 0 when that
// executor's format is invalid; r_correct_main is the correctness of the
// rollout the executor belongs to. Correctness values and expert scores are
// clamped to [0, 1] (NaN counts as 0). See [RewardWeights].
//
// r_expert comes from an [ExpertJudge]. When a run has no judge, the value is
// given by a named [ExpertFallback] that the run states at start. The default,
// [ExpertFallbackFormat], sets r_expert to the executor's own r_format. Since
// R_S is 0 for an invalid format anyway, this adds the constant β3 to every
// valid executor: the group-relative sub advantage then ranks executors by
// format validity and by the main answer's correctness only, and the reward
// keeps its full [0, 1] scale. It does not invent a quality judgement that no
// judge made. [ExpertFallbackZero] (r_expert = 0) and
// [ExpertFallbackCorrectMain] (r_expert = r_correct_main) are the
// alternatives.
//
// # Advantages
//
// Within a group of rewards, Â = (R − μ)/(σ + ε) with μ the mean, σ the
// population standard deviation and ε = [Epsilon] = 1e-6. A group whose
// rewards are all exactly equal is a zero-variance group: its μ is that value,
// its σ is 0 and every advantage is exactly 0 (rounding in the mean can
// therefore never create tiny non-zero advantages). With
// [GroupConfig.DropZeroVariance] such a group's samples are not emitted
// instead; either way the group is counted in [StepCounters]. The main and
// sub levels are judged independently.
//
// # Alignment
//
// In mode [ModeMGRPO] each rollout k of a query contributes exactly d̄ executor
// entries, so every query yields K·d̄ of them:
//
//   - d_k = d̄: the trajectories are kept as they are.
//   - d_k > d̄: a uniformly random subset of d̄ trajectories is kept (in
//     ascending sub_index order); the others are dropped and counted.
//   - 0 < d_k < d̄: the d_k originals are kept and d̄ − d_k duplicates are
//     appended. Duplicates are drawn in rounds: each round takes the
//     trajectories in a fresh uniformly random order, so no trajectory is
//     copied twice before every other one has been copied once (the copy
//     counts of a rollout's trajectories differ by at most one). A duplicate
//     gets a new sub_index d_k, d_k+1, … and records duplicate_of = the
//     original's (rollout, sub_index).
//   - d_k = 0 while other rollouts of the query have executor trajectories:
//     the rollout borrows d̄ entries from the pool of all other rollouts'
//     trajectories (every trajectory of the pool equally likely, drawn in
//     rounds as above). Borrowed entries get sub_index 0…d̄−1 and
//     duplicate_of names the source rollout and sub_index.
//   - no rollout of the query has an executor trajectory: the query yields K·d̄
//     padding entries. A padding entry has reward and advantage 0, is left
//     out of the sub statistics and becomes one Sample whose only token is the
//     pad token with loss mask 0, finish_reason "padding" and format_ok false.
//
// Sub advantages are computed over the K·d̄ aligned entries of the query,
// duplicates included and padding excluded. All random choices come from a
// PCG generator seeded by [AlignSeed] from the run seed, the step and the
// query id, and rollouts are processed in order of k, so the alignment is
// reproducible.
//
// d̄ is either fixed or, with [DBarSpec] auto, the 0.99 nearest-rank quantile
// of observed d_k values (see [Quantile]), at least 1.
//
// # Modes
//
// [ModeMGRPO] emits planner and executor samples; [ModeFrozenSub] emits
// planner samples only (stats keep the observed d_k, with dbar 0 and no sub
// rewards); [ModeSingle] is plain GRPO over the K rollouts of one agent, whose
// samples carry role planner.
//
// # Files
//
// A step is written to OUT/step-NNNNNN/ with planner.jsonl, executor.jsonl,
// stats.jsonl and rollouts.jsonl, optionally with Parquet files of the same
// columns. Files are written in a hidden temporary directory that is renamed
// into place, so a step directory only ever holds complete files. Output is a
// pure function of the inputs: keys are in a fixed order and nothing records
// the time.
package rollout
