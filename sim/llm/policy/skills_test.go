package policy

import (
	"math"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*Skills)
		wantField string // "" means valid
	}{
		{"default", func(*Skills) {}, ""},
		{"perfect", func(s *Skills) { *s = PerfectSkills() }, ""},
		{"probability above 1", func(s *Skills) { s.Sloppiness = 1.5 }, "Sloppiness"},
		{"negative probability", func(s *Skills) { s.MalformedCall = -0.1 }, "MalformedCall"},
		{"NaN probability", func(s *Skills) { s.Guess = math.NaN() }, "Guess"},
		{"no delegation style", func(s *Skills) { s.DelegateHop, s.DelegateChain, s.CrossCheck = 0, 0, 0 }, "DelegateHop"},
		{"too many queries", func(s *Skills) { s.MaxQueries = 4 }, "MaxQueries"},
		{"zero planner turns", func(s *Skills) { s.PlannerTurns = 0 }, "PlannerTurns"},
		{"huge executor budget", func(s *Skills) { s.ExecutorTurns = 1000 }, "ExecutorTurns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := DefaultSkills()
			tt.edit(&s)
			err := s.Validate()
			switch {
			case tt.wantField == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.wantField != "" && (err == nil || !strings.Contains(err.Error(), tt.wantField)):
				t.Errorf("Validate() = %v, want an error naming %s", err, tt.wantField)
			}
			if got := New(s).Skills().Validate(); got != nil {
				t.Errorf("New did not clamp: %v", got)
			}
		})
	}
}
