package rollout

import (
	"fmt"
	"math/rand/v2"
)

// RolloutRewards are the rewards of one rollout of a group.
type RolloutRewards struct {
	// Main is the planner's reward R_M (the single agent's in mode single).
	Main float64
	// Subs are the rewards R_S of the rollout's executor trajectories in
	// sub_index order; len(Subs) is d_k.
	Subs []float64
}

// GroupInput is the group of K rollouts of one query; rollout k is
// Rollouts[k].
type GroupInput struct {
	QueryID  string
	Rollouts []RolloutRewards
}

// GroupConfig holds the settings shared by every group of a step.
type GroupConfig struct {
	// Mode selects which sides are computed; the zero value is invalid.
	Mode Mode
	// DBar is the resolved d̄ (≥ 1), used in mode mgrpo only.
	DBar int
	// DropZeroVariance drops the samples of a zero-variance group instead of
	// giving them zero advantages; the main and sub levels are judged
	// separately.
	DropZeroVariance bool
	// RunSeed, Step and the query id seed the alignment (see AlignSeed).
	RunSeed uint64
	Step    int
}

// MainEntry is the planner-side result for rollout k of a group.
type MainEntry struct {
	Rollout   int
	Reward    float64
	Advantage float64
}

// SubEntry is one aligned executor entry with its reward and advantage.
// Padding entries have reward and advantage 0.
type SubEntry struct {
	SubSlot
	Reward    float64
	Advantage float64
}

// GroupResult is the outcome of ProcessGroup for one query.
type GroupResult struct {
	QueryID string
	// Mode is the mode the group was processed in.
	Mode Mode
	// Main holds one entry per rollout, in rollout order.
	Main []MainEntry
	// Sub holds the K·d̄ aligned executor entries in mode mgrpo, else nothing.
	Sub []SubEntry
	// Alignment holds the alignment counts (its Slots are those of Sub).
	Alignment Alignment
	// Stats are the query's statistics.
	Stats QueryStats
	// MainZeroVariance and SubZeroVariance report zero-variance levels.
	MainZeroVariance bool
	SubZeroVariance  bool
	// MainDropped and SubDropped report levels whose samples are not to be
	// emitted (zero variance with DropZeroVariance, or a mode without that
	// side: SubDropped stays false in modes frozen-sub and single, where Sub
	// is simply empty).
	MainDropped bool
	SubDropped  bool
}

// ProcessGroup computes main advantages, aligns executor entries and computes
// sub advantages for one query, as described in the package documentation.
// It returns an error for invalid input: no rollouts, an empty query id,
// non-finite rewards, executor rewards in mode single, or d̄ < 1 in mode
// mgrpo.
func ProcessGroup(cfg GroupConfig, in GroupInput) (GroupResult, error) {
	if _, err := ParseMode(string(cfg.Mode)); err != nil || cfg.Mode == "" {
		return GroupResult{}, fmt.Errorf("process group %q: invalid mode %q", in.QueryID, cfg.Mode)
	}
	if in.QueryID == "" {
		return GroupResult{}, fmt.Errorf("process group: empty query id")
	}
	if len(in.Rollouts) == 0 {
		return GroupResult{}, fmt.Errorf("process group %q: no rollouts", in.QueryID)
	}
	if cfg.Mode.TrainsExecutor() && cfg.DBar < 1 {
		return GroupResult{}, fmt.Errorf("process group %q: dbar = %d, want ≥ 1 in mode %s", in.QueryID, cfg.DBar, cfg.Mode)
	}
	K := len(in.Rollouts)
	mainRewards := make([]float64, K)
	d := make([]int, K)
	for k, r := range in.Rollouts {
		if err := checkFinite(fmt.Sprintf("process group %q: rollout %d main reward", in.QueryID, k), r.Main); err != nil {
			return GroupResult{}, err
		}
		if cfg.Mode == ModeSingle && len(r.Subs) > 0 {
			return GroupResult{}, fmt.Errorf("process group %q: rollout %d has %d executor rewards in mode single", in.QueryID, k, len(r.Subs))
		}
		for i, s := range r.Subs {
			if err := checkFinite(fmt.Sprintf("process group %q: rollout %d sub %d reward", in.QueryID, k, i), s); err != nil {
				return GroupResult{}, err
			}
		}
		mainRewards[k] = r.Main
		d[k] = len(r.Subs)
	}

	res := GroupResult{QueryID: in.QueryID, Mode: cfg.Mode}
	adv, m := Advantages(mainRewards)
	res.Main = make([]MainEntry, K)
	for k := range K {
		res.Main[k] = MainEntry{Rollout: k, Reward: mainRewards[k], Advantage: adv[k]}
	}
	res.MainZeroVariance = m.ZeroVariance
	res.MainDropped = m.ZeroVariance && cfg.DropZeroVariance
	res.Stats = QueryStats{
		QueryID:     in.QueryID,
		MainRewards: mainRewards,
		MainMean:    m.Mean,
		MainStd:     m.Std,
		D:           d,
		SubRewards:  []float64{},
	}
	if !cfg.Mode.TrainsExecutor() {
		return res, nil
	}

	rng := rand.New(rand.NewPCG(AlignSeed(cfg.RunSeed, cfg.Step, in.QueryID)))
	al, err := Align(d, cfg.DBar, rng)
	if err != nil {
		return GroupResult{}, fmt.Errorf("process group %q: %w", in.QueryID, err)
	}
	res.Alignment = al
	res.Stats.DBar = cfg.DBar
	res.Sub = make([]SubEntry, len(al.Slots))
	var live []int // positions in res.Sub of non-padding entries
	for i, s := range al.Slots {
		res.Sub[i] = SubEntry{SubSlot: s}
		if s.Padding {
			continue
		}
		res.Sub[i].Reward = in.Rollouts[s.Source.Rollout].Subs[s.Source.SubIndex]
		live = append(live, i)
	}
	if len(live) == 0 {
		return res, nil
	}
	subRewards := make([]float64, len(live))
	for j, i := range live {
		subRewards[j] = res.Sub[i].Reward
	}
	subAdv, sm := Advantages(subRewards)
	for j, i := range live {
		res.Sub[i].Advantage = subAdv[j]
	}
	res.Stats.SubRewards = subRewards
	res.Stats.SubMean = sm.Mean
	res.Stats.SubStd = sm.Std
	res.SubZeroVariance = sm.ZeroVariance
	res.SubDropped = sm.ZeroVariance && cfg.DropZeroVariance
	return res, nil
}
