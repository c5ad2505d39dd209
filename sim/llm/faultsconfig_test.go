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
