package rollout

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestBuildSamplesSplitDuplicateAndPadding(t *testing.T) {
	in := GroupInput{QueryID: "q7", Rollouts: []RolloutRewards{
		{Main: 1, Subs: []float64{0.9}},
		{Main: 0, Subs: []float64{0.1, 0.3}},
	}}
	res, err := ProcessGroup(cfg(ModeMGRPO, 2, false), in)
	if err != nil {
		t.Fatal(err)
	}
	tr := trajectoriesFor(in)
	// The planner of rollout 0 was split by drift into two sequences.
	tr.Planner[0].Sequences = append(tr.Planner[0].Sequences, Sequence{
		InputIDs: []int32{7, 8}, LossMask: []int8{1, 0}, Logprobs: []float64{-1},
	})
	b := SampleBuilder{Run: "run-a", Step: 4}
	pl, ex, err := b.Build(res, tr)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl) != 3 {
		t.Fatalf("%d planner samples, want 3", len(pl))
	}
	if pl[0].Advantage != pl[1].Advantage || pl[0].Rollout != 0 || pl[1].Rollout != 0 || pl[2].Rollout != 1 {
		t.Errorf("split planner samples %+v / %+v", pl[0], pl[1])
	}
	if pl[0].SubIndex != nil || pl[0].DuplicateOf != nil || pl[0].Role != RolePlanner || pl[0].Run != "run-a" || pl[0].Step != 4 || pl[0].PolicyVersion != 3 {
		t.Errorf("planner sample %+v", pl[0])
	}
	if len(ex) != 4 {
		t.Fatalf("%d executor samples, want 4", len(ex))
	}
	dup := ex[1]
	if dup.Rollout != 0 || *dup.SubIndex != 1 || dup.DuplicateOf == nil || *dup.DuplicateOf != (SubRef{0, 0}) ||
		dup.InputIDs[0] != 1000 || dup.Reward != 0.9 || dup.Advantage != ex[0].Advantage {
		t.Errorf("duplicate sample %+v", dup)
	}
	// Samples never alias each other or the input.
	ex[0].InputIDs[0] = -1
	if ex[1].InputIDs[0] != 1000 || tr.Executors[0][0].Sequences[0].InputIDs[0] != 1000 {
		t.Error("samples share token buffers")
	}

	// A group without executors yields padding samples.
	pin := GroupInput{QueryID: "p", Rollouts: []RolloutRewards{{Main: 1}, {Main: 0}}}
	pres, err := ProcessGroup(cfg(ModeMGRPO, 2, false), pin)
	if err != nil {
		t.Fatal(err)
	}
	_, pex, err := SampleBuilder{Run: "r", PadTokenID: 99, PadPolicyVersion: 5}.Build(pres, trajectoriesFor(pin))
	if err != nil {
		t.Fatal(err)
	}
	if len(pex) != 4 {
		t.Fatalf("%d padding samples, want 4", len(pex))
	}
	for _, s := range pex {
		if s.FinishReason != FinishReasonPadding || s.FormatOK || s.Advantage != 0 || s.Reward != 0 ||
			len(s.InputIDs) != 1 || s.InputIDs[0] != 99 || s.LossMask[0] != 0 || s.PolicyVersion != 5 {
			t.Errorf("padding sample %+v", s)
		}
	}
}

func TestSampleJSONKeys(t *testing.T) {
	sub := 2
	s := Sample{Run: "r", Role: RoleExecutor, SubIndex: &sub, DuplicateOf: &SubRef{1, 0}, InputIDs: []int{1}, LossMask: []int8{1}, Logprobs: []float64{-0.5}}
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"run":"r","step":0,"role":"executor","query_id":"","rollout":0,"sub_index":2,"duplicate_of":{"rollout":1,"sub_index":0},` +
		`"policy_version":0,"input_ids":[1],"loss_mask":[1],"logprobs":[-0.5],"reward":0,"advantage":0,"num_turns":0,"finish_reason":"","format_ok":false,` +
		`"first_turn":0,"sample_turns":0,"turn_finish_reasons":null,"split_reason":""}`
	if string(raw) != want {
		t.Fatalf("JSON\n got %s\nwant %s", raw, want)
	}
}

func TestBuildSamplesValidation(t *testing.T) {
	in := GroupInput{QueryID: "q9", Rollouts: []RolloutRewards{{Main: 1, Subs: []float64{1}}, {Main: 0, Subs: []float64{0, 1}}}}
	res, err := ProcessGroup(cfg(ModeMGRPO, 2, false), in)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(tr *GroupTrajectories)
		want   string
	}{
		{"length mismatch", func(tr *GroupTrajectories) { tr.Executors[1][1].Sequences[0].LossMask = []int8{1} },
			`query "q9" rollout 1 sub 1: sequence 0: lengths differ`},
		{"logprob for no sampled token", func(tr *GroupTrajectories) {
			tr.Planner[1].Sequences[0].Logprobs = append(tr.Planner[1].Sequences[0].Logprobs, -0.1)
		}, `query "q9" rollout 1 planner: sequence 0: 3 logprobs for 2 sampled tokens`},
		{"logprob missing", func(tr *GroupTrajectories) { tr.Planner[1].Sequences[0].Logprobs = nil },
			`query "q9" rollout 1 planner: sequence 0: 0 logprobs for 2 sampled tokens`},
		{"mask value", func(tr *GroupTrajectories) { tr.Planner[0].Sequences[0].LossMask[1] = 2 },
			`rollout 0 planner: sequence 0: token 1: loss mask 2`},
		{"nan logprob", func(tr *GroupTrajectories) { tr.Executors[0][0].Sequences[0].Logprobs[1] = math.NaN() },
			`rollout 0 sub 0: sequence 0: sampled token 1: logprob NaN`},
		{"empty sequence", func(tr *GroupTrajectories) { tr.Executors[0][0].Sequences[0] = Sequence{} },
			`rollout 0 sub 0: sequence 0: no tokens`},
		{"missing executor", func(tr *GroupTrajectories) { tr.Executors[1] = tr.Executors[1][:1] },
			`rollout 1: 1 executor trajectories, rewards given for 2`},
		{"missing planner", func(tr *GroupTrajectories) { tr.Planner = tr.Planner[:1] },
			`1 planner trajectories for 2 rollouts`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := trajectoriesFor(in)
			tt.mutate(&tr)
			_, _, err := SampleBuilder{Run: "r"}.Build(res, tr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestBuildSharedTokens(t *testing.T) {
	in := GroupInput{QueryID: "q", Rollouts: []RolloutRewards{{Main: 1, Subs: []float64{0.9}}, {Main: 0, Subs: []float64{0.1, 0.3}}}}
	res, err := ProcessGroup(cfg(ModeMGRPO, 2, false), in)
	if err != nil {
		t.Fatal(err)
	}
	tr := trajectoriesFor(in)
	copied, cex, err := SampleBuilder{Run: "r"}.Build(res, tr)
	if err != nil {
		t.Fatal(err)
	}
	shared, sex, err := SampleBuilder{Run: "r", ShareTokens: true}.Build(res, tr)
	if err != nil {
		t.Fatal(err)
	}
	var want, got bytes.Buffer
	if err := writeSamplesJSONL(&want, append(copied, cex...)); err != nil {
		t.Fatal(err)
	}
	if err := writeSamplesJSONL(&got, append(shared, sex...)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("shared samples encode as\n%s\nwant\n%s", got.Bytes(), want.Bytes())
	}
	// The duplicate shares its original's widened tokens and the
	// trajectory's mask, capped: appending to one sample's slice never
	// writes into another's.
	if &sex[1].InputIDs[0] != &sex[0].InputIDs[0] || &sex[1].Logprobs[0] != &sex[0].Logprobs[0] {
		t.Error("duplicate does not share its original's token slices")
	}
	if &sex[1].LossMask[0] != &tr.Executors[0][0].Sequences[0].LossMask[0] {
		t.Error("shared samples do not share the trajectory's mask")
	}
	if &cex[1].InputIDs[0] == &cex[0].InputIDs[0] || &cex[1].LossMask[0] == &tr.Executors[0][0].Sequences[0].LossMask[0] {
		t.Error("copied samples share token slices")
	}
	for _, s := range sex {
		if cap(s.InputIDs) != len(s.InputIDs) || cap(s.LossMask) != len(s.LossMask) || cap(s.Logprobs) != len(s.Logprobs) {
			t.Errorf("shared slices not capped: %+v", s)
		}
	}
}

// TestSequenceWide checks that a compact sequence widens to a Sample's
// arrays: the ids as int, the sampled logprobs at their mask-1 positions
// and 0 elsewhere, the mask shared only when asked.
func TestSequenceWide(t *testing.T) {
	s := Sequence{InputIDs: []int32{5, 2147483647, 0, 9}, LossMask: []int8{0, 1, 0, 1}, Logprobs: []float64{-0.5, -2}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, copyMask := range []bool{false, true} {
		w := s.Wide(copyMask)
		if !slices.Equal(w.InputIDs, []int{5, 2147483647, 0, 9}) || !slices.Equal(w.LossMask, s.LossMask) ||
			!slices.Equal(w.Logprobs, []float64{0, -0.5, 0, -2}) {
			t.Errorf("Wide(%v) = %+v", copyMask, w)
		}
		if shared := &w.LossMask[0] == &s.LossMask[0]; shared == copyMask {
			t.Errorf("Wide(%v): mask shared %v", copyMask, shared)
		}
	}
}
