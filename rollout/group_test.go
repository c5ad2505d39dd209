package rollout

import (
	"math"
	"strings"
	"testing"
)

func cfg(mode Mode, dbar int, drop bool) GroupConfig {
	return GroupConfig{Mode: mode, DBar: dbar, DropZeroVariance: drop, RunSeed: 7, Step: 1}
}

func TestProcessGroupMGRPO(t *testing.T) {
	// Rollout 0: correct answer, one executor (0.6) duplicated to d̄ = 2.
	// Rollout 1: wrong answer, two executors (1.0, 0.0) kept as they are.
	in := GroupInput{QueryID: "q1", Rollouts: []RolloutRewards{
		{Main: 1.0, Subs: []float64{0.6}},
		{Main: 0.1, Subs: []float64{1.0, 0.0}},
	}}
	res, err := ProcessGroup(cfg(ModeMGRPO, 2, false), in)
	if err != nil {
		t.Fatal(err)
	}
	// Main: μ = 0.55, σ = 0.45.
	wantMain := []float64{0.45 / 0.450001, -0.45 / 0.450001}
	for k, m := range res.Main {
		if m.Rollout != k || !near(m.Advantage, wantMain[k]) {
			t.Errorf("main[%d] = %+v, want advantage %v", k, m, wantMain[k])
		}
	}
	// Sub: rewards 0.6, 0.6, 1.0, 0.0; μ = 0.55; σ² = (0.0025·2 + 0.2025 +
	// 0.3025)/4 = 0.1275.
	sigma := math.Sqrt(0.1275)
	wantSub := []struct {
		reward, adv float64
		dup         bool
	}{
		{0.6, 0.05 / (sigma + 1e-6), false},
		{0.6, 0.05 / (sigma + 1e-6), true},
		{1.0, 0.45 / (sigma + 1e-6), false},
		{0.0, -0.55 / (sigma + 1e-6), false},
	}
	if len(res.Sub) != 4 {
		t.Fatalf("%d sub entries, want 4", len(res.Sub))
	}
	for i, w := range wantSub {
		s := res.Sub[i]
		if !near(s.Reward, w.reward) || !near(s.Advantage, w.adv) || s.Duplicate != w.dup {
			t.Errorf("sub[%d] = %+v, want reward %v advantage %v duplicate %v", i, s, w.reward, w.adv, w.dup)
		}
	}
	st := res.Stats
	if st.QueryID != "q1" || !near(st.MainMean, 0.55) || !near(st.MainStd, 0.45) ||
		st.DBar != 2 || st.D[0] != 1 || st.D[1] != 2 || len(st.SubRewards) != 4 ||
		!near(st.SubMean, 0.55) || !near(st.SubStd, sigma) {
		t.Errorf("stats = %+v", st)
	}
}

func TestProcessGroupBorrowAndPadding(t *testing.T) {
	t.Run("borrow", func(t *testing.T) {
		// Rollout 0 has no executor and borrows 0.8 twice from rollout 1.
		in := GroupInput{QueryID: "q", Rollouts: []RolloutRewards{{Main: 0}, {Main: 1, Subs: []float64{0.8, 0.2}}}}
		res, err := ProcessGroup(cfg(ModeMGRPO, 2, false), in)
		if err != nil {
			t.Fatal(err)
		}
		// Each round of borrowing takes both trajectories once: rewards are
		// 0.8, 0.2 (borrowed, some order) and 0.8, 0.2; μ = 0.5, σ = 0.3.
		for _, s := range res.Sub {
			want := 0.3 / 0.300001
			if s.Reward < 0.5 {
				want = -want
			}
			if !near(s.Advantage, want) {
				t.Errorf("entry %+v, want advantage %v", s, want)
			}
			if s.Rollout == 0 && (!s.Borrowed || s.Source.Rollout != 1) {
				t.Errorf("entry %+v, want borrowed from rollout 1", s)
			}
		}
	})
	t.Run("padding", func(t *testing.T) {
		in := GroupInput{QueryID: "q", Rollouts: []RolloutRewards{{Main: 1}, {Main: 0}, {Main: 0.1}}}
		res, err := ProcessGroup(cfg(ModeMGRPO, 3, false), in)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Sub) != 9 || res.Alignment.Padding != 9 {
			t.Fatalf("%d entries, %d padding; want 9 and 9", len(res.Sub), res.Alignment.Padding)
		}
		for _, s := range res.Sub {
			if !s.Padding || s.Reward != 0 || s.Advantage != 0 {
				t.Errorf("entry %+v, want zero padding", s)
			}
		}
		if len(res.Stats.SubRewards) != 0 || res.Stats.SubMean != 0 || res.Stats.SubStd != 0 || res.SubZeroVariance {
			t.Errorf("stats %+v zero-variance %v, want empty sub statistics", res.Stats, res.SubZeroVariance)
		}
		var c StepCounters
		c.Add(res)
		if c.NoExecutorQueries != 1 || c.PaddingEntries != 9 {
			t.Errorf("counters %+v", c)
		}
	})
}

func TestProcessGroupZeroVariance(t *testing.T) {
	in := GroupInput{QueryID: "q", Rollouts: []RolloutRewards{
		{Main: 0.1, Subs: []float64{0.5}},
		{Main: 0.1, Subs: []float64{0.5, 0.5}},
	}}
	for _, drop := range []bool{false, true} {
		res, err := ProcessGroup(cfg(ModeMGRPO, 2, drop), in)
		if err != nil {
			t.Fatal(err)
		}
		if !res.MainZeroVariance || !res.SubZeroVariance || res.MainDropped != drop || res.SubDropped != drop {
			t.Errorf("drop=%v: zero %v/%v dropped %v/%v", drop, res.MainZeroVariance, res.SubZeroVariance, res.MainDropped, res.SubDropped)
		}
		for _, m := range res.Main {
			if m.Advantage != 0 {
				t.Errorf("drop=%v: main advantage %v, want 0", drop, m.Advantage)
			}
		}
		for _, s := range res.Sub {
			if s.Advantage != 0 {
				t.Errorf("drop=%v: sub advantage %v, want 0", drop, s.Advantage)
			}
		}
		var c StepCounters
		c.Add(res)
		wantDrop := 0
		if drop {
			wantDrop = 1
		}
		if c.MainZeroVariance != 1 || c.SubZeroVariance != 1 || c.MainDropped != wantDrop || c.SubDropped != wantDrop {
			t.Errorf("drop=%v: counters %+v", drop, c)
		}
		pl, ex, err := SampleBuilder{Run: "r", Step: 1}.Build(res, trajectoriesFor(in))
		if err != nil {
			t.Fatal(err)
		}
		wantPl, wantEx := 2, 4
		if drop {
			wantPl, wantEx = 0, 0
		}
		if len(pl) != wantPl || len(ex) != wantEx {
			t.Errorf("drop=%v: %d planner and %d executor samples, want %d and %d", drop, len(pl), len(ex), wantPl, wantEx)
		}
	}
}

func TestProcessGroupModes(t *testing.T) {
	in := GroupInput{QueryID: "q", Rollouts: []RolloutRewards{
		{Main: 1, Subs: []float64{0.5, 1}},
		{Main: 0, Subs: []float64{0.1}},
	}}
	t.Run("frozen-sub", func(t *testing.T) {
		res, err := ProcessGroup(cfg(ModeFrozenSub, 0, false), in)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Sub) != 0 || res.Stats.DBar != 0 || len(res.Stats.SubRewards) != 0 || res.Stats.D[0] != 2 || res.Stats.D[1] != 1 {
			t.Errorf("result %+v", res)
		}
		if !near(res.Main[0].Advantage, 0.5/0.500001) {
			t.Errorf("main advantage %v", res.Main[0].Advantage)
		}
		pl, ex, err := SampleBuilder{Run: "r"}.Build(res, trajectoriesFor(in))
		if err != nil || len(pl) != 2 || len(ex) != 0 {
			t.Errorf("samples %d/%d err %v, want 2/0", len(pl), len(ex), err)
		}
	})
	t.Run("single", func(t *testing.T) {
		if _, err := ProcessGroup(cfg(ModeSingle, 0, false), in); err == nil || !strings.Contains(err.Error(), "mode single") {
			t.Fatalf("executor rewards in single mode: error %v", err)
		}
		single := GroupInput{QueryID: "q", Rollouts: []RolloutRewards{{Main: 1}, {Main: 0}, {Main: 1}, {Main: 1}}}
		res, err := ProcessGroup(cfg(ModeSingle, 0, false), single)
		if err != nil {
			t.Fatal(err)
		}
		// μ = 0.75, σ = √0.1875.
		s := math.Sqrt(0.1875) + 1e-6
		want := []float64{0.25 / s, -0.75 / s, 0.25 / s, 0.25 / s}
		for k, m := range res.Main {
			if !near(m.Advantage, want[k]) {
				t.Errorf("advantage[%d] = %v, want %v", k, m.Advantage, want[k])
			}
		}
		pl, ex, err := SampleBuilder{Run: "r"}.Build(res, trajectoriesFor(single))
		if err != nil || len(pl) != 4 || len(ex) != 0 || pl[0].Role != RolePlanner {
			t.Errorf("samples %d/%d err %v", len(pl), len(ex), err)
		}
	})
	t.Run("mgrpo needs dbar", func(t *testing.T) {
		if _, err := ProcessGroup(cfg(ModeMGRPO, 0, false), in); err == nil {
			t.Fatal("dbar 0 in mgrpo: want an error")
		}
	})
}

func TestProcessGroupBadInput(t *testing.T) {
	tests := []struct {
		name string
		c    GroupConfig
		in   GroupInput
		want string
	}{
		{"no mode", GroupConfig{DBar: 1}, GroupInput{QueryID: "q", Rollouts: []RolloutRewards{{}}}, "invalid mode"},
		{"no id", cfg(ModeMGRPO, 1, false), GroupInput{Rollouts: []RolloutRewards{{}}}, "empty query id"},
		{"no rollouts", cfg(ModeMGRPO, 1, false), GroupInput{QueryID: "q"}, "no rollouts"},
		{"nan main", cfg(ModeMGRPO, 1, false), GroupInput{QueryID: "q", Rollouts: []RolloutRewards{{Main: math.NaN()}}}, "rollout 0 main reward"},
		{"inf sub", cfg(ModeMGRPO, 1, false), GroupInput{QueryID: "q", Rollouts: []RolloutRewards{{}, {Subs: []float64{0, math.Inf(1)}}}}, "rollout 1 sub 1 reward"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ProcessGroup(tt.c, tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeMGRPO, "mgrpo": ModeMGRPO, "frozen-sub": ModeFrozenSub, "single": ModeSingle} {
		if got, err := ParseMode(in); got != want || err != nil {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMode("frozen"); err == nil {
		t.Error("ParseMode(frozen): want an error")
	}
}

// trajectoriesFor returns one single-sequence trajectory per planner and
// executor of in, with tokens derived from their position.
func trajectoriesFor(in GroupInput) GroupTrajectories {
	var tr GroupTrajectories
	for k, r := range in.Rollouts {
		tr.Planner = append(tr.Planner, simpleTrajectory(100*k))
		var ex []Trajectory
		for i := range r.Subs {
			ex = append(ex, simpleTrajectory(1000+100*k+i))
		}
		tr.Executors = append(tr.Executors, ex)
	}
	return tr
}

func simpleTrajectory(base int) Trajectory {
	return Trajectory{
		Sequences: []Sequence{{
			InputIDs: []int32{int32(base), int32(base + 1), int32(base + 2)},
			LossMask: []int8{0, 1, 1},
			Logprobs: []float64{-0.5, -0.25},
		}},
		PolicyVersion: 3,
		NumTurns:      1,
		FinishReason:  "stop",
		FormatOK:      true,
	}
}
