package farm

import (
	"encoding/json"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
)

// TestValidatedDoesNotTravel checks that a trajectory result decoded from
// JSON, as a worker elsewhere would send it, has its sequences checked by
// sample building again, while one checked in this process is not.
func TestValidatedDoesNotTravel(t *testing.T) {
	bad := TrajectoryResult{Sequences: []rollout.Sequence{{InputIDs: []int32{1}, LossMask: []int8{0}, Logprobs: []float64{-1}}}, validated: true}
	raw, err := json.Marshal(bad)
	if err != nil {
		t.Fatal(err)
	}
	var decoded TrajectoryResult
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatal(err)
	}
	if decoded.validated {
		t.Fatal("validated survived JSON")
	}
	if sampleTrajectory(nil, decoded, 0, true).Validated {
		t.Error("a decoded result's sequences would skip the check")
	}
	if !sampleTrajectory(nil, bad, 0, true).Validated {
		t.Error("a result checked here would be checked again")
	}
}
