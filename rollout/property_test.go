package rollout

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"pgregory.net/rapid"
)

func genGroup(t *rapid.T, q, K int) (GroupInput, GroupTrajectories) {
	// Few reward values, so that zero-variance groups come up often.
	rewardValues := []float64{0, 0.1, 0.5, 0.55, 1}
	in := GroupInput{QueryID: fmt.Sprintf("q%d", q)}
	var tr GroupTrajectories
	genTraj := func(label string) Trajectory {
		n := rapid.IntRange(1, 3).Draw(t, label+"/seqs")
		tj := Trajectory{PolicyVersion: 1, NumTurns: n, FinishReason: "stop", FormatOK: true}
		for range n {
			L := rapid.IntRange(1, 6).Draw(t, label+"/len")
			var s Sequence
			for range L {
				s.InputIDs = append(s.InputIDs, rapid.Int32Range(0, 50000).Draw(t, label+"/id"))
				m := rapid.IntRange(0, 1).Draw(t, label+"/mask")
				s.LossMask = append(s.LossMask, int8(m))
				if m == 1 {
					s.Logprobs = append(s.Logprobs, -rapid.Float64Range(0, 20).Draw(t, label+"/lp"))
				}
			}
			tj.Sequences = append(tj.Sequences, s)
		}
		return tj
	}
	for k := range K {
		r := RolloutRewards{Main: rapid.SampledFrom(rewardValues).Draw(t, "main")}
		d := rapid.IntRange(0, 6).Draw(t, "d")
		var ex []Trajectory
		for i := range d {
			r.Subs = append(r.Subs, rapid.SampledFrom(rewardValues).Draw(t, "sub"))
			ex = append(ex, genTraj(fmt.Sprintf("e%d.%d", k, i)))
		}
		in.Rollouts = append(in.Rollouts, r)
		tr.Planner = append(tr.Planner, genTraj(fmt.Sprintf("p%d", k)))
		tr.Executors = append(tr.Executors, ex)
	}
	return in, tr
}

func meanOf(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func TestPropertyGroups(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		K := rapid.IntRange(1, 8).Draw(t, "K")
		dbar := rapid.IntRange(1, 5).Draw(t, "dbar")
		c := GroupConfig{Mode: ModeMGRPO, DBar: dbar, RunSeed: rapid.Uint64().Draw(t, "seed"), Step: rapid.IntRange(0, 1000).Draw(t, "step")}
		in, tr := genGroup(t, 0, K)
		res, err := ProcessGroup(c, in)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Main) != K || len(res.Sub) != K*dbar {
			t.Fatalf("%d main and %d sub entries, want %d and %d", len(res.Main), len(res.Sub), K, K*dbar)
		}
		perK := make([]int, K)
		usedSub := make([]map[int]bool, K)
		for k := range usedSub {
			usedSub[k] = map[int]bool{}
		}
		var live []SubEntry
		for _, s := range res.Sub {
			perK[s.Rollout]++
			if usedSub[s.Rollout][s.SubIndex] {
				t.Fatalf("sub_index %d used twice in rollout %d", s.SubIndex, s.Rollout)
			}
			usedSub[s.Rollout][s.SubIndex] = true
			dk := len(in.Rollouts[s.Rollout].Subs)
			switch {
			case s.Padding:
				if s.Advantage != 0 || s.Reward != 0 {
					t.Fatalf("padding entry %+v not zero", s)
				}
				continue
			case s.Borrowed:
				if dk != 0 || s.Source.Rollout == s.Rollout {
					t.Fatalf("entry %+v borrowed by a rollout with d_k = %d", s, dk)
				}
			default:
				if s.Source.Rollout != s.Rollout {
					t.Fatalf("entry %+v from another rollout without the d_k = 0 rule", s)
				}
				if !s.Duplicate && s.Source.SubIndex != s.SubIndex {
					t.Fatalf("original %+v has a different source index", s)
				}
			}
			if s.Source.SubIndex >= len(in.Rollouts[s.Source.Rollout].Subs) {
				t.Fatalf("entry %+v names a missing trajectory", s)
			}
			if s.Reward != in.Rollouts[s.Source.Rollout].Subs[s.Source.SubIndex] {
				t.Fatalf("entry %+v has the wrong reward", s)
			}
			live = append(live, s)
		}
		for k, n := range perK {
			if n != dbar {
				t.Fatalf("rollout %d has %d entries, want %d", k, n, dbar)
			}
		}
		if !res.MainZeroVariance {
			var adv []float64
			for _, m := range res.Main {
				adv = append(adv, m.Advantage)
			}
			if m := meanOf(adv); math.Abs(m) > 1e-9 {
				t.Fatalf("main advantages have mean %v", m)
			}
		}
		if len(live) > 0 && !res.SubZeroVariance {
			var adv []float64
			for _, s := range live {
				adv = append(adv, s.Advantage)
			}
			if m := meanOf(adv); math.Abs(m) > 1e-9 {
				t.Fatalf("sub advantages have mean %v", m)
			}
		}
		if len(res.Stats.SubRewards) != len(live) {
			t.Fatalf("%d sub rewards in stats, %d live entries", len(res.Stats.SubRewards), len(live))
		}

		pl, ex, err := SampleBuilder{Run: "r", Step: c.Step}.Build(res, tr)
		if err != nil {
			t.Fatal(err)
		}
		wantPl, wantEx := 0, 0
		for _, p := range tr.Planner {
			wantPl += len(p.Sequences)
		}
		for _, s := range res.Sub {
			if s.Padding {
				wantEx++
			} else {
				wantEx += len(tr.Executors[s.Source.Rollout][s.Source.SubIndex].Sequences)
			}
		}
		if len(pl) != wantPl || len(ex) != wantEx {
			t.Fatalf("%d planner and %d executor samples, want %d and %d", len(pl), len(ex), wantPl, wantEx)
		}
	})
}

// TestPropertyStepFilesReproducible writes the same random step twice and
// requires byte-identical files, and Parquet that reads back as the JSONL.
func TestPropertyStepFilesReproducible(t *testing.T) {
	base := t.TempDir()
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		B := rapid.IntRange(1, 4).Draw(rt, "B")
		K := rapid.IntRange(1, 5).Draw(rt, "K")
		mode := rapid.SampledFrom([]Mode{ModeMGRPO, ModeFrozenSub}).Draw(rt, "mode")
		c := GroupConfig{Mode: mode, DBar: rapid.IntRange(1, 4).Draw(rt, "dbar"), RunSeed: rapid.Uint64().Draw(rt, "seed"),
			Step: 1, DropZeroVariance: rapid.Bool().Draw(rt, "drop")}
		var groups []GroupInput
		var trs []GroupTrajectories
		for q := range B {
			g, tr := genGroup(rt, q, K)
			groups = append(groups, g)
			trs = append(trs, tr)
		}
		var dirs []string
		for i := range 2 {
			files, _ := buildStep(rt, c, groups, trs)
			out := filepath.Join(base, fmt.Sprintf("run%d-%d", run, i))
			if err := (DirSink{Dir: out, Parquet: true}).WriteStep(context.Background(), c.Step, files); err != nil {
				rt.Fatal(err)
			}
			dirs = append(dirs, StepDir(out, c.Step))
		}
		for _, name := range []string{PlannerFile, ExecutorFile, StatsFile, RolloutsFile, PlannerParquetFile, ExecutorParquetFile, StatsParquetFile} {
			a, err := os.ReadFile(filepath.Join(dirs[0], name))
			if err != nil {
				rt.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dirs[1], name))
			if err != nil {
				rt.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				rt.Fatalf("%s differs between two runs with the same seed", name)
			}
		}
		checkParquetMatchesJSONL(rt, dirs[0])
	})
}
