package llm

import (
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/internal/yamlstrict"
)

func TestFaultsConfigFaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   FaultsConfig
		want Faults
	}{
		{"rates only", FaultsConfig{Rate503: 0.1, Rate500: 0.2, RateDrop: 0.3, DeathEvery: 50}, Faults{Rate503: 0.1, Rate500: 0.2, RateDrop: 0.3}},
		{"death every 200 by default", FaultsConfig{DeathFor: yamlstrict.Duration{Duration: time.Second}}, Faults{DeathFor: time.Second, DeathEvery: 200}},
		{"death every n", FaultsConfig{DeathFor: yamlstrict.Duration{Duration: 2 * time.Second}, DeathEvery: 7}, Faults{DeathFor: 2 * time.Second, DeathEvery: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.Faults()
			if got.Rate503 != tc.want.Rate503 || got.Rate500 != tc.want.Rate500 || got.RateDrop != tc.want.RateDrop ||
				got.DeathFor != tc.want.DeathFor || got.DeathEvery != tc.want.DeathEvery {
				t.Errorf("Faults() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestFaultsConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    FaultsConfig
		want []string
	}{
		{"none", FaultsConfig{}, nil},
		{"rates in range", FaultsConfig{Rate503: 0.5, Rate500: 0.25, RateDrop: 0.25}, nil},
		{"a rate out of range", FaultsConfig{Rate500: 1.5}, []string{"sim_faults.rate_500 (--sim-fault-500): 1.5: must be in [0, 1]", "sim_faults (--sim-fault-503): the rates sum to more than 1"}},
		{"rates summing past 1", FaultsConfig{Rate503: 0.6, RateDrop: 0.6}, []string{"sim_faults (--sim-fault-503): the rates sum to more than 1"}},
		{"negative death", FaultsConfig{DeathFor: yamlstrict.Duration{Duration: -time.Second}, DeathEvery: -1}, []string{
			"sim_faults.endpoint_death (--sim-fault-endpoint-death): -1s: must not be negative (0: never)",
			"sim_faults.death_every (--sim-fault-death-every): -1: must not be negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.f.Check()
			if len(got) != len(tc.want) {
				t.Fatalf("problems %v, want %d", got, len(tc.want))
			}
			for i, err := range got {
				if err.Error() != tc.want[i] {
					t.Errorf("problem %q, want %q", err, tc.want[i])
				}
			}
		})
	}
}
