package farm

import (
	"strings"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/rollout"
)

// The names the search and visit tools record in their calls' metadata.
const (
	searchTool = "search"
	visitTool  = "visit"
)

// addTokens adds n tokens of role to m, creating it when needed.
func addTokens(m map[string]int64, role string, n int) map[string]int64 {
	if m == nil {
		m = map[string]int64{}
	}
	m[role] += int64(n)
	return m
}

// Progress reports a running step, once per finished rollout.
type Progress struct {
	Step int
	// Done of Total rollouts of the step have finished.
	Done, Total int
	// MeanReward is the mean R_M of the finished rollouts.
	MeanReward float64
	// Errors counts finished rollouts that failed.
	Errors int
	// Drifts and HistoryEdits total the finished rollouts' drift events
	// and history edits (see rollout.StepSummary).
	Drifts, HistoryEdits int
	// Rate is finished rollouts per second since the step started.
	Rate float64
	// Limits are the model roles' adaptive request limits under
	// --concurrency auto (Config.ConcurrencyLimits), nil otherwise.
	Limits map[string]int64
}

// summarize fills the result-derived fields of a summary.
func summarize(sum *rollout.StepSummary, results []RolloutResult) {
	acc := newSummaryAcc(sum)
	for i := range results {
		acc.add(&results[i])
	}
	acc.finish()
}

// summaryAcc fills a summary's result-derived fields one result at a time,
// so a step assembled from the store need not hold its results.
type summaryAcc struct {
	sum                                        *rollout.StepSummary
	mainSum, subSum, correctSum                float64
	plannerOK, execOK, subScored, trajectories int
	lengths                                    map[string][]int
	// excludedRollouts and excludedSubs count what excluded groups held.
	excludedRollouts, excludedSubs int
	// infraEndpoints counts the endpoints infra failures named.
	infraEndpoints map[string]int
}

func newSummaryAcc(sum *rollout.StepSummary) *summaryAcc {
	sum.DHistogram = map[int]int{}
	sum.ToolErrors = map[string]int{}
	sum.ToolCacheByTool = map[string]rollout.CacheCounts{}
	sum.FormatErrors = map[string]int{}
	return &summaryAcc{sum: sum, lengths: map[string][]int{}}
}

func (a *summaryAcc) formatError(reason string) {
	a.trajectories++
	if c := formatClass(reason); c != "" {
		a.sum.FormatErrors[c]++
	}
}

// add counts one result.
func (a *summaryAcc) add(r *RolloutResult) {
	a.addResult(r, false)
}

// addResult counts one result; the rewards of a result whose group is
// excluded count in no mean (they were not trained).
func (a *summaryAcc) addResult(r *RolloutResult, excluded bool) {
	sum := a.sum
	// The step's versions are its oldest rollout's (a resumed step may mix
	// rollouts sampled before and after a weight update).
	if sum.Rollouts == 0 || r.Task.PolicyVersion < sum.PolicyVersion {
		sum.PolicyVersion = r.Task.PolicyVersion
	}
	if sum.Rollouts == 0 || r.Task.ExecutorPolicyVersion < sum.ExecutorPolicyVersion {
		sum.ExecutorPolicyVersion = r.Task.ExecutorPolicyVersion
	}
	sum.Rollouts++
	sum.ScoringSeconds += r.ScoringSeconds
	a.formatError(r.Scores.FormatReason)
	if r.Scores.Verdict != nil {
		sum.Usage.JudgeCalls += r.Scores.Verdict.JudgeCalls
	}
	if r.Failed() {
		sum.FailedRollouts++
	}
	a.countFailures(r)
	if excluded {
		a.excludedRollouts++
		a.excludedSubs += len(r.Scores.Subs)
	}
	if !excluded {
		a.mainSum += r.Scores.Main
		a.correctSum += r.Scores.Correct
	}
	if r.Scores.FormatOK {
		a.plannerOK++
	}
	if r.Scores.ScoreError != "" {
		sum.ScoreErrors++
	}
	d := len(r.Tree.Executors)
	sum.DHistogram[d]++
	sum.Executors += d
	for _, s := range r.Scores.Subs {
		a.formatError(s.FormatReason)
		if s.ExpertRaw != "" {
			sum.Usage.JudgeCalls++
		}
		if s.FormatOK {
			a.execOK++
		}
		if s.ExpertError != "" {
			sum.ExpertErrors++
		}
		if !excluded {
			a.subSum += s.Reward
			a.subScored++
		}
	}
	for _, tr := range append([]TrajectoryResult{r.Planner}, r.Executors...) {
		sum.DriftEvents += tr.Drifts
		sum.HistoryEdits += tr.HistoryEdits
		sum.ContextCuts += tr.ContextCuts
		if tr.SequenceError != "" {
			sum.SequenceErrors++
		}
	}
	for _, tr := range r.trajectories() {
		if tr != nil {
			a.lengths[tr.Role] = append(a.lengths[tr.Role], countTrajectory(sum, tr))
		}
	}
}

// finish computes the rates and means once every result was added.
func (a *summaryAcc) finish() {
	sum := a.sum
	sum.ResponseTokens = make(map[string]rollout.LengthStats, len(a.lengths))
	for role, ls := range a.lengths {
		sum.ResponseTokens[role] = rollout.NewLengthStats(ls)
	}
	if a.trajectories > 0 {
		n := 0
		for _, c := range sum.FormatErrors {
			n += c
		}
		sum.FormatErrorRate = float64(n) / float64(a.trajectories)
	}
	if sum.LLMCalls > 0 {
		sum.TruncationRate = float64(sum.TruncatedTurns) / float64(sum.LLMCalls)
	}
	if sum.ToolCalls > 0 {
		n := 0
		for _, c := range sum.ToolErrors {
			n += c
		}
		sum.ToolErrorRate = float64(n) / float64(sum.ToolCalls)
	}
	if n := float64(sum.Rollouts - a.excludedRollouts); n > 0 {
		sum.MeanMainReward = a.mainSum / n
		sum.Accuracy = a.correctSum / n
	}
	if n := float64(sum.Rollouts); n > 0 {
		sum.PlannerFormatValid = float64(a.plannerOK) / n
	}
	if n := a.subScored + a.excludedSubs; n > 0 {
		sum.ExecutorFormatValid = float64(a.execOK) / float64(n)
	}
	if a.subScored > 0 {
		sum.MeanSubReward = a.subSum / float64(a.subScored)
	}
}

// countFailures adds r's failure counts: its infra runs by cause (the
// retried ones too), its retries, a model failure by reason, its tool
// outages.
func (a *summaryAcc) countFailures(r *RolloutResult) {
	sum := a.sum
	infra := func(cause string) {
		if sum.InfraFailures == nil {
			sum.InfraFailures = map[string]int{}
		}
		sum.InfraFailures[cause]++
	}
	for _, c := range r.RetryCauses {
		infra(c)
	}
	sum.RolloutRetries += r.Retries
	sum.ToolOutages += r.ToolOutages
	if r.Retries > 0 || r.infra() {
		sum.InfraAffected++
		ep := r.RetryEndpoint
		if r.infra() {
			ep = r.FailureEndpoint
		}
		if ep != "" {
			if a.infraEndpoints == nil {
				a.infraEndpoints = map[string]int{}
			}
			a.infraEndpoints[ep]++
			if c, top := a.infraEndpoints[ep], a.infraEndpoints[sum.InfraEndpoint]; c > top || c == top && ep < sum.InfraEndpoint {
				sum.InfraEndpoint = ep
			}
		}
	}
	switch {
	case r.infra():
		infra(r.FailureCause)
		sum.InfraRollouts++
	case r.FailureKind == failure.KindModel || !r.Scores.FormatOK:
		reason := r.FailureCause
		if reason == "" {
			reason = modelReason(r)
		}
		if sum.ModelFailures == nil {
			sum.ModelFailures = map[string]int{}
		}
		sum.ModelFailures[reason]++
	}
}

// modelReason names the model failure of a rollout that ran to its end
// with an invalid format.
func modelReason(r *RolloutResult) string {
	p := r.Tree.Planner
	if p == nil {
		return failure.CauseOther
	}
	for _, e := range p.FormatErrors {
		switch {
		case strings.Contains(e, "turn budget"), strings.Contains(e, "delegation budget"):
			return failure.CauseTurnBudget
		case strings.Contains(e, "token limit"):
			return failure.CauseTokenBudget
		}
	}
	if r.Planner.SequenceError != "" {
		return failure.CauseSequenceAssembly
	}
	return failure.CauseInvalidFormat
}

// countTrajectory adds a trajectory's model calls, tokens, truncations and
// tool calls, and returns the tokens it generated.
func countTrajectory(sum *rollout.StepSummary, tr *agents.Trajectory) (generated int) {
	for _, t := range tr.Turns {
		if t == nil {
			continue
		}
		sum.LLMCalls++
		prompt, completion := t.Usage.PromptTokens, t.Usage.CompletionTokens
		if prompt == 0 && completion == 0 {
			prompt, completion = len(t.PromptIDs), len(t.CompletionIDs)
		}
		sum.PromptTokens += int64(prompt)
		sum.CompletionTokens += int64(completion)
		sum.Usage.PromptTokens = addTokens(sum.Usage.PromptTokens, tr.Role, prompt)
		sum.Usage.CompletionTokens = addTokens(sum.Usage.CompletionTokens, tr.Role, completion)
		generated += completion
		if t.FinishReason == "length" {
			sum.TruncatedTurns++
		}
		if v := t.WeightVersion; v != "" {
			if sum.TurnsByVersion == nil {
				sum.TurnsByVersion = map[string]int{}
			}
			sum.TurnsByVersion[v]++
		}
	}
	for _, s := range tr.Steps {
		for _, c := range s.Calls {
			sum.ToolCalls++
			if c.Meta.Class != failure.ClassOK {
				sum.ToolErrors[string(c.Meta.Class)]++
			}
			if m := c.Meta; m.Requests > 0 {
				sum.ToolCache.Add(m.Requests, m.CacheHits, m.SharedHits)
				tc := sum.ToolCacheByTool[m.Tool]
				tc.Add(m.Requests, m.CacheHits, m.SharedHits)
				sum.ToolCacheByTool[m.Tool] = tc
			}
			switch c.Meta.Tool {
			case searchTool:
				sum.Usage.SearchRequests += c.Meta.Upstream
			case visitTool:
				sum.Usage.VisitRequests += c.Meta.Upstream
			}
			// An MCP tool's provider is "mcp:SERVER" (tools/mcp.Provider).
			if server, ok := strings.CutPrefix(c.Meta.Provider, "mcp:"); ok && c.Meta.Upstream > 0 {
				if sum.Usage.MCPCalls == nil {
					sum.Usage.MCPCalls = map[string]int64{}
				}
				sum.Usage.MCPCalls[server+"."+c.Meta.Tool] += int64(c.Meta.Upstream)
			}
			if c.Meta.Tool == visitTool {
				sum.VisitCalls++
				if c.Meta.Class == failure.ClassRefused {
					sum.VisitsRefused++
				}
			}
		}
	}
	return generated
}
