package rollout

// QueryStats are the per-query statistics exchanged between the planner and
// executor sides, one line of stats.jsonl.
type QueryStats struct {
	// QueryID is the task id.
	QueryID string `json:"query_id" parquet:"query_id"`
	// MainRewards are the K main rewards in rollout order.
	MainRewards []float64 `json:"main_rewards" parquet:"main_rewards,list"`
	// MainMean and MainStd are μ and the population σ of MainRewards.
	MainMean float64 `json:"main_mean" parquet:"main_mean"`
	MainStd  float64 `json:"main_std" parquet:"main_std"`
	// D holds d_k, the observed executor trajectory count of each rollout.
	D []int `json:"d" parquet:"d,list"`
	// DBar is the d̄ the query was aligned to; 0 when the mode has no sub side.
	DBar int `json:"dbar" parquet:"dbar"`
	// SubRewards are the rewards of the aligned non-padding executor entries,
	// in entry order (rollout after rollout); empty without a sub side.
	SubRewards []float64 `json:"sub_rewards" parquet:"sub_rewards,list"`
	// SubMean and SubStd are μ_S and the population σ_S of SubRewards.
	SubMean float64 `json:"sub_mean" parquet:"sub_mean"`
	SubStd  float64 `json:"sub_std" parquet:"sub_std"`
}

// StepCounters count the special cases met while processing the groups of a
// step. Add accumulates one group's result.
type StepCounters struct {
	// Queries is the number of groups processed.
	Queries int `json:"queries"`
	// MainZeroVariance and SubZeroVariance count groups whose main or sub
	// rewards were all equal.
	MainZeroVariance int `json:"main_zero_variance"`
	SubZeroVariance  int `json:"sub_zero_variance"`
	// MainDropped and SubDropped count zero-variance groups whose samples were
	// dropped (GroupConfig.DropZeroVariance).
	MainDropped int `json:"main_dropped"`
	SubDropped  int `json:"sub_dropped"`
	// NoExecutorQueries counts queries aligned in mode mgrpo in which no
	// rollout had an executor trajectory (all entries are padding).
	NoExecutorQueries int `json:"no_executor_queries"`
	// PaddingEntries, DuplicateEntries and BorrowedEntries count aligned
	// executor entries of each kind (borrowed ones are also duplicates).
	PaddingEntries   int `json:"padding_entries"`
	DuplicateEntries int `json:"duplicate_entries"`
	BorrowedEntries  int `json:"borrowed_entries"`
	// DroppedSubTrajectories counts executor trajectories dropped because
	// d_k > d̄.
	DroppedSubTrajectories int `json:"dropped_sub_trajectories"`
}

// Add adds the counts of one group's result.
func (c *StepCounters) Add(r GroupResult) {
	c.Queries++
	if r.MainZeroVariance {
		c.MainZeroVariance++
	}
	if r.SubZeroVariance {
		c.SubZeroVariance++
	}
	if r.MainDropped {
		c.MainDropped++
	}
	if r.SubDropped {
		c.SubDropped++
	}
	if r.Alignment.Padding > 0 {
		c.NoExecutorQueries++
	}
	c.PaddingEntries += r.Alignment.Padding
	c.DuplicateEntries += r.Alignment.Duplicates
	c.BorrowedEntries += r.Alignment.Borrowed
	c.DroppedSubTrajectories += r.Alignment.Dropped
}
