package rollout

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func seeded(query string) *rand.Rand {
	return rand.New(rand.NewPCG(AlignSeed(42, 1, query)))
}

// perRollout groups slots by rollout.
func perRollout(a Alignment, k int) [][]SubSlot {
	out := make([][]SubSlot, k)
	for _, s := range a.Slots {
		out[s.Rollout] = append(out[s.Rollout], s)
	}
	return out
}

func TestAlignCases(t *testing.T) {
	tests := []struct {
		name string
		d    []int
		dbar int
		// checks on the result
		dropped, dups, borrowed, padding int
		check                            func(t *testing.T, rs [][]SubSlot)
	}{
		{
			name: "exact fit keeps originals in order",
			d:    []int{2, 2}, dbar: 2,
			check: func(t *testing.T, rs [][]SubSlot) {
				for k, r := range rs {
					for i, s := range r {
						if s != original(k, i) {
							t.Errorf("slot %d of rollout %d = %+v, want original %d", i, k, s, i)
						}
					}
				}
			},
		},
		{
			name: "one trajectory duplicated to fill",
			d:    []int{1, 3}, dbar: 3, dups: 2,
			check: func(t *testing.T, rs [][]SubSlot) {
				want := []SubSlot{
					original(0, 0),
					{Rollout: 0, SubIndex: 1, Source: SubRef{0, 0}, Duplicate: true},
					{Rollout: 0, SubIndex: 2, Source: SubRef{0, 0}, Duplicate: true},
				}
				if !slices.Equal(rs[0], want) {
					t.Errorf("rollout 0 = %+v, want %+v", rs[0], want)
				}
			},
		},
		{
			name: "duplicates drawn in rounds",
			d:    []int{2}, dbar: 6, dups: 4,
			check: func(t *testing.T, rs [][]SubSlot) {
				// 4 copies of 2 trajectories in rounds: each copied twice.
				count := map[int]int{}
				for i, s := range rs[0] {
					if i < 2 {
						if s != original(0, i) {
							t.Errorf("slot %d = %+v, want original", i, s)
						}
						continue
					}
					if !s.Duplicate || s.SubIndex != i || s.Source.Rollout != 0 {
						t.Errorf("slot %d = %+v, want a duplicate with sub_index %d from rollout 0", i, s, i)
					}
					count[s.Source.SubIndex]++
				}
				if count[0] != 2 || count[1] != 2 {
					t.Errorf("copy counts = %v, want 2 and 2", count)
				}
			},
		},
		{
			name: "extra trajectories dropped",
			d:    []int{5, 2}, dbar: 2, dropped: 3,
			check: func(t *testing.T, rs [][]SubSlot) {
				var idx []int
				for _, s := range rs[0] {
					if s.Duplicate || s.Source != (SubRef{0, s.SubIndex}) {
						t.Errorf("slot %+v, want a kept original", s)
					}
					idx = append(idx, s.SubIndex)
				}
				if len(idx) != 2 || !slices.IsSorted(idx) || idx[0] == idx[1] || idx[1] > 4 {
					t.Errorf("kept %v, want 2 distinct ascending indices < 5", idx)
				}
			},
		},
		{
			name: "d_k = 0 borrows from the only other trajectory",
			d:    []int{0, 1}, dbar: 2, dups: 3, borrowed: 2,
			check: func(t *testing.T, rs [][]SubSlot) {
				want := []SubSlot{
					{Rollout: 0, SubIndex: 0, Source: SubRef{1, 0}, Duplicate: true, Borrowed: true},
					{Rollout: 0, SubIndex: 1, Source: SubRef{1, 0}, Duplicate: true, Borrowed: true},
				}
				if !slices.Equal(rs[0], want) {
					t.Errorf("rollout 0 = %+v, want %+v", rs[0], want)
				}
			},
		},
		{
			name: "d_k = 0 borrows every pooled trajectory once per round",
			d:    []int{1, 0, 2}, dbar: 3, dups: 2 + 3 + 1, borrowed: 3,
			check: func(t *testing.T, rs [][]SubSlot) {
				var got []SubRef
				for _, s := range rs[1] {
					if !s.Borrowed || s.Source.Rollout == 1 {
						t.Errorf("slot %+v, want borrowed from another rollout", s)
					}
					got = append(got, s.Source)
				}
				slices.SortFunc(got, func(a, b SubRef) int { return a.Rollout*100 + a.SubIndex - b.Rollout*100 - b.SubIndex })
				want := []SubRef{{0, 0}, {2, 0}, {2, 1}}
				if !slices.Equal(got, want) {
					t.Errorf("borrowed %v, want %v", got, want)
				}
			},
		},
		{
			name: "no executors anywhere: all padding",
			d:    []int{0, 0, 0}, dbar: 2, padding: 6,
			check: func(t *testing.T, rs [][]SubSlot) {
				for k, r := range rs {
					for i, s := range r {
						want := SubSlot{Rollout: k, SubIndex: i, Padding: true}
						if s != want {
							t.Errorf("slot = %+v, want %+v", s, want)
						}
					}
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Align(tt.d, tt.dbar, seeded(tt.name))
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Slots) != len(tt.d)*tt.dbar {
				t.Fatalf("%d slots, want %d", len(a.Slots), len(tt.d)*tt.dbar)
			}
			if a.Dropped != tt.dropped || a.Duplicates != tt.dups || a.Borrowed != tt.borrowed || a.Padding != tt.padding {
				t.Errorf("counts dropped %d dups %d borrowed %d padding %d, want %d %d %d %d",
					a.Dropped, a.Duplicates, a.Borrowed, a.Padding, tt.dropped, tt.dups, tt.borrowed, tt.padding)
			}
			rs := perRollout(a, len(tt.d))
			for k, r := range rs {
				if len(r) != tt.dbar {
					t.Errorf("rollout %d has %d slots, want %d", k, len(r), tt.dbar)
				}
			}
			tt.check(t, rs)
		})
	}
}

func TestAlignErrors(t *testing.T) {
	if _, err := Align([]int{1}, 0, seeded("x")); err == nil {
		t.Error("dbar 0: want an error")
	}
	if _, err := Align([]int{-1}, 1, seeded("x")); err == nil {
		t.Error("negative d: want an error")
	}
}

func TestAlignReproducible(t *testing.T) {
	d := []int{7, 0, 3, 1, 9}
	a1, _ := Align(d, 4, seeded("q"))
	a2, _ := Align(d, 4, seeded("q"))
	if !slices.Equal(a1.Slots, a2.Slots) {
		t.Fatal("same seed gave different alignments")
	}
	a3, _ := Align(d, 4, rand.New(rand.NewPCG(AlignSeed(42, 2, "q"))))
	if slices.Equal(a1.Slots, a3.Slots) {
		t.Fatal("a different step gave the same alignment (seed does not depend on step)")
	}
}

// TestAlignUniform checks that drops and duplicates pick trajectories
// uniformly: over many seeds each trajectory is kept (or copied) equally
// often.
func TestAlignUniform(t *testing.T) {
	const trials = 20000
	kept := make([]int, 5)
	copied := make([]int, 3)
	for i := range trials {
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		a, err := Align([]int{5, 3}, 4, rng)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range a.Slots {
			switch {
			case s.Rollout == 0:
				kept[s.SubIndex]++
			case s.Duplicate:
				copied[s.Source.SubIndex]++
			}
		}
	}
	for i, n := range kept {
		// Each of 5 trajectories is kept with probability 4/5.
		if f := float64(n) / trials; f < 0.78 || f > 0.82 {
			t.Errorf("trajectory %d kept with frequency %.3f, want ≈ 0.8", i, f)
		}
	}
	for i, n := range copied {
		if f := float64(n) / trials; f < 0.31 || f > 0.36 {
			t.Errorf("trajectory %d copied with frequency %.3f, want ≈ 1/3", i, f)
		}
	}
}

func TestAlignSeed(t *testing.T) {
	a1, b1 := AlignSeed(1, 3, "q1")
	a2, b2 := AlignSeed(1, 3, "q2")
	if a1 != 1 || a2 != 1 || b1 == b2 {
		t.Fatalf("AlignSeed: got (%d,%d) and (%d,%d); want run seed first and distinct query words", a1, b1, a2, b2)
	}
}
