package rollout

// StepSummary describes one completed step. Every field except the timings
// is a pure function of the step's results.
type StepSummary struct {
	Step int `json:"step"`
	// PolicyVersion is the policy version the step's rollouts were sampled
	// with (the planner's, or the single agent's); ExecutorPolicyVersion
	// the executors'.
	PolicyVersion         int64 `json:"policy_version"`
	ExecutorPolicyVersion int64 `json:"executor_policy_version"`
	// Queries and Rollouts count the step's groups and rollouts;
	// FailedRollouts those recorded with an error (scored 0).
	Queries        int `json:"queries"`
	Rollouts       int `json:"rollouts"`
	FailedRollouts int `json:"failed_rollouts"`
	// MeanMainReward is the mean R_M over all rollouts; MeanSubReward the
	// mean R_S over all executor trajectories (before alignment), 0 when
	// the mode has no sub side or there were none.
	MeanMainReward float64 `json:"mean_main_reward"`
	MeanSubReward  float64 `json:"mean_sub_reward"`
	// Accuracy is the mean r_correct over all rollouts.
	Accuracy float64 `json:"accuracy"`
	// PlannerFormatValid and ExecutorFormatValid are the fractions of
	// planner (single) and executor trajectories with a valid format.
	PlannerFormatValid  float64 `json:"planner_format_valid"`
	ExecutorFormatValid float64 `json:"executor_format_valid"`
	// Executors counts executor trajectories; DHistogram maps d_k to the
	// number of rollouts that delegated d_k times.
	Executors  int         `json:"executors"`
	DHistogram map[int]int `json:"d_histogram"`
	// DBar is the d̄ the step was aligned to (0 without a sub side).
	DBar int `json:"dbar"`
	// Counters are the alignment and zero-variance counts.
	Counters StepCounters `json:"counters"`
	// PlannerSamples and ExecutorSamples count the samples written.
	PlannerSamples  int `json:"planner_samples"`
	ExecutorSamples int `json:"executor_samples"`
	// DriftEvents counts drift events: a turn whose prompt ids did not
	// extend the previous turn's prompt and completion (a re-rendering
	// broke the sequence; 0 on the token path, warned about otherwise);
	// SequenceErrors trajectories whose turns formed no sequences.
	DriftEvents int `json:"drift_events"`
	// HistoryEdits counts gateway requests that rewrote messages the model
	// had already seen (truncation, summarization, a changed system
	// prompt), each starting a new sample; ContextCuts the splits the
	// context window forced. Neither is drift.
	HistoryEdits   int `json:"history_edits"`
	ContextCuts    int `json:"context_cuts,omitempty"`
	SequenceErrors int `json:"sequence_errors"`
	// ScoreErrors and ExpertErrors count scorer and expert judge failures.
	ScoreErrors  int `json:"score_errors"`
	ExpertErrors int `json:"expert_errors"`
	// ToolCalls counts tool calls (delegations included); ToolErrors those
	// whose metadata carries a failure class, by class.
	ToolCalls  int            `json:"tool_calls"`
	ToolErrors map[string]int `json:"tool_errors"`
	// VisitCalls counts visit tool calls; VisitsRefused those the SSRF
	// guard refused (a host outside the allow-list resolving to a private
	// address, or too many redirects).
	VisitCalls    int `json:"visit_calls"`
	VisitsRefused int `json:"visits_refused"`
	// LLMCalls counts model calls (turns); PromptTokens and
	// CompletionTokens their tokens.
	LLMCalls         int   `json:"llm_calls"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// TurnsByVersion counts the model calls by the weight version the
	// server reported for each (absent when no server reported one): with
	// asynchronous training a step's turns span weight updates.
	TurnsByVersion map[string]int `json:"turns_by_version,omitempty"`
	// ResponseTokens summarises, per role (planner, executor, single),
	// the tokens each trajectory generated over its turns.
	ResponseTokens map[string]LengthStats `json:"response_tokens"`
	// TruncatedTurns counts model calls that stopped at their token limit
	// (finish reason "length"); TruncationRate is their share of LLMCalls.
	TruncatedTurns int     `json:"truncated_turns"`
	TruncationRate float64 `json:"truncation_rate"`
	// MainZeroVarianceFraction and SubZeroVarianceFraction are the shares
	// of the step's groups whose main or sub rewards were all equal (and
	// whose advantages are therefore 0).
	MainZeroVarianceFraction float64 `json:"main_zero_variance_fraction"`
	SubZeroVarianceFraction  float64 `json:"sub_zero_variance_fraction"`
	// FormatErrors counts trajectories whose format is invalid for the
	// reward, by reason (rollout_failed, trajectory_error, format_errors,
	// judged_invalid, sequence_assembly, no_trajectory); FormatErrorRate is
	// their share of all trajectories.
	FormatErrors    map[string]int `json:"format_errors"`
	FormatErrorRate float64        `json:"format_error_rate"`
	// ToolErrorRate is the share of ToolCalls whose metadata carries a
	// failure class (ToolErrors counts them by class).
	ToolErrorRate float64 `json:"tool_error_rate"`
	// ToolCache counts the tool calls' sub-requests (search queries,
	// visited URLs) and the tool cache's answers to them, over all tools;
	// ToolCacheByTool by tool name (tools with sub-requests only).
	ToolCache       CacheCounts            `json:"tool_cache"`
	ToolCacheByTool map[string]CacheCounts `json:"tool_cache_by_tool"`
	// Usage is the step's billable work and its cost under the run's
	// prices.
	Usage Usage `json:"usage"`
	// WallSeconds is the step's duration from scheduling to written files,
	// in seconds, of which RolloutSeconds the rollouts, AssembleSeconds
	// the advantages, alignment and samples, and WriteSeconds the step
	// files. ScoringSeconds is the time spent scoring rollouts (judges
	// included), summed over rollouts: it overlaps RolloutSeconds, as each
	// rollout is scored as soon as it ends. RolloutsPerSecond is Rollouts
	// over RolloutSeconds; CompletionTokensPerSecond is CompletionTokens
	// over RolloutSeconds.
	WallSeconds               float64 `json:"wall_seconds"`
	RolloutSeconds            float64 `json:"rollout_seconds"`
	ScoringSeconds            float64 `json:"scoring_seconds"`
	AssembleSeconds           float64 `json:"assemble_seconds"`
	WriteSeconds              float64 `json:"write_seconds"`
	RolloutsPerSecond         float64 `json:"rollouts_per_second"`
	CompletionTokensPerSecond float64 `json:"completion_tokens_per_second"`

	// Sampling is how each role's model calls sampled (planner, executor;
	// the roles the mode runs), as configured: the settings every turn was
	// sent with unless its record says otherwise (TurnRecord.Sampling).
	Sampling map[string]SamplingRecord `json:"sampling,omitempty"`
	// Training is what training did after the step (mgrpo train), by role
	// (planner, executor); TrainSeconds and SyncSeconds are the longest
	// role's (the roles train concurrently). Absent for a rollout run.
	Training     map[string]RoleTraining `json:"training,omitempty"`
	TrainSeconds float64                 `json:"train_seconds,omitempty"`
	SyncSeconds  float64                 `json:"sync_seconds,omitempty"`
	// RestartedRollouts counts the step's rollouts that a weight update
	// restarted from scratch (mgrpo train --partial-rollouts restart),
	// their partial work discarded; like the timings it depends on the
	// schedule, and a resumed run counts only its own.
	RestartedRollouts int `json:"restarted_rollouts,omitempty"`
	// Draws are the numbered draws (a query and its K seeds) whose groups
	// make the step, in the order they completed (mgrpo train
	// --stream-groups; absent for fixed steps).
	Draws []int `json:"draws,omitempty"`
	// ExtraDraws counts the draws a streamed step made beyond its
	// BatchSize because groups whose main rewards were all equal did not
	// count (dynamic sampling, --drop-zero-variance); DiscardedGroups are
	// those groups' draws, left out of the step. ExtraDrawsCapped says the
	// cap (--max-extra-draws) was reached, after which such groups counted
	// toward the batch (their samples dropped as with fixed steps).
	ExtraDraws       int   `json:"extra_draws,omitempty"`
	DiscardedGroups  []int `json:"discarded_groups,omitempty"`
	ExtraDrawsCapped bool  `json:"extra_draws_capped,omitempty"`

	// The failure counts (see docs/architecture.md's class table), each
	// omitted when zero. InfraFailures counts, by cause, every run of a
	// rollout that was an infra failure, the retried runs included;
	// RolloutRetries the runs made again; InfraRollouts the rollouts still
	// infra after their retries. ExcludedGroups counts the groups kept out
	// of the step's batches for them (--on-infra-failure exclude), and
	// Excluded says which and why. ModelFailures counts, by reason, the
	// rollouts whose planner (single agent) failed for the model's own
	// doing (scored 0 and trained); ToolOutages the tool calls whose
	// provider failed after the tool's retries.
	InfraFailures  map[string]int  `json:"infra_failures,omitempty"`
	RolloutRetries int             `json:"rollout_retries,omitempty"`
	InfraRollouts  int             `json:"infra_rollouts,omitempty"`
	ExcludedGroups int             `json:"excluded_groups,omitempty"`
	Excluded       []ExcludedGroup `json:"excluded,omitempty"`
	ModelFailures  map[string]int  `json:"model_failures,omitempty"`
	ToolOutages    int             `json:"tool_outages,omitempty"`
	// InfraAffected counts the rollouts that met an infra failure in any
	// run (retried or not); InfraEndpoint is the endpoint their failures
	// named most often.
	InfraAffected int    `json:"infra_affected,omitempty"`
	InfraEndpoint string `json:"infra_endpoint,omitempty"`
}

// ExcludedGroup is a group a step kept out of its batches: its query, the
// first of its rollouts that stayed an infra failure after its retries,
// that failure's cause and the endpoint it names.
type ExcludedGroup struct {
	QueryID  string `json:"query_id"`
	Rollout  string `json:"rollout"`
	Cause    string `json:"cause"`
	Endpoint string `json:"endpoint,omitempty"`
}

// RoleTraining is one role's optimizer step on a step's samples.
type RoleTraining struct {
	// Samples is the batch size sent.
	Samples int `json:"samples"`
	// SampledVersion is the oldest policy version among the batch's
	// samples (each sample's is its trajectory's oldest turn's);
	// PreviousVersion is the trainer's when it trained it, Staleness the
	// difference (0 on-policy, at most the run's max staleness unless
	// stale samples were kept); Version is the trained policy's, whose
	// weights Weights names as the trainer does.
	SampledVersion  int64  `json:"sampled_version"`
	PreviousVersion int64  `json:"previous_version"`
	Staleness       int64  `json:"staleness"`
	Version         int64  `json:"version"`
	Weights         string `json:"weights,omitempty"`
	// LossTokens counts the batch's tokens under the loss mask (a summed
	// loss divided by it is the mean loss per token).
	LossTokens int `json:"loss_tokens,omitempty"`
	// Metrics are the trainer's (loss, KL, clip fraction, … by its names).
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// TrainSeconds is the training call's duration; SyncSeconds the
	// weight sync's to the role's endpoints.
	TrainSeconds float64 `json:"train_seconds"`
	SyncSeconds  float64 `json:"sync_seconds,omitempty"`
	// StaleSamples counts the samples of the step, before any drop, whose
	// policy version (their trajectory's oldest turn's) was more than the
	// run's max staleness behind PreviousVersion, and StaleGroups the
	// queries holding one. With --stale-policy drop those groups' samples
	// were left out of the batch (Samples counts what was sent) and
	// StaleDropped counts them; with keep they were trained.
	StaleSamples int `json:"stale_samples,omitempty"`
	StaleGroups  int `json:"stale_groups,omitempty"`
	StaleDropped int `json:"stale_dropped,omitempty"`
}

// CacheCounts are the tool cache's outcomes for a set of sub-requests.
type CacheCounts struct {
	// Requests counts the sub-requests; Hits those a cache answered, of
	// which SharedHits the shared cache (the run's store: a result another
	// worker or run had fetched); Misses the others (asked upstream, or
	// answered by an identical request already in flight).
	Requests   int `json:"requests"`
	Hits       int `json:"hits"`
	SharedHits int `json:"shared_hits"`
	Misses     int `json:"misses"`
	// HitRate is Hits over Requests (0 without requests).
	HitRate float64 `json:"hit_rate"`
}

// Add counts one call of requests sub-requests, hits of them answered by a
// cache, shared of those by the shared one, and updates HitRate. Counts
// out of range (hits > requests) are clamped, so a malformed record cannot
// make Misses negative.
func (c *CacheCounts) Add(requests, hits, shared int) {
	requests = max(requests, 0)
	hits = min(max(hits, 0), requests)
	shared = min(max(shared, 0), hits)
	c.Requests += requests
	c.Hits += hits
	c.SharedHits += shared
	c.Misses += requests - hits
	if c.Requests > 0 {
		c.HitRate = float64(c.Hits) / float64(c.Requests)
	}
}

// LengthStats summarise lengths in tokens: how many were measured, their
// mean, nearest-rank 95th percentile and maximum.
type LengthStats struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	P95   int     `json:"p95"`
	Max   int     `json:"max"`
}

// NewLengthStats summarises lengths (none: the zero value).
func NewLengthStats(lengths []int) LengthStats {
	if len(lengths) == 0 {
		return LengthStats{}
	}
	s := LengthStats{Count: len(lengths), P95: Quantile(lengths, 0.95)}
	total := 0
	for _, n := range lengths {
		total += n
		s.Max = max(s.Max, n)
	}
	s.Mean = float64(total) / float64(len(lengths))
	return s
}
