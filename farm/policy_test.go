package farm

import (
	"context"
	"fmt"
	"testing"

	"github.com/mgrpo/mgrpo/internal/pool"
)

// TestPolicyChosenInNew: the step policy and the dispatcher follow the
// configuration, once, in New.
func TestPolicyChosenInNew(t *testing.T) {
	tests := []struct {
		name     string
		training *Training
		queue    bool
		policy   string
		dispatch string
	}{
		{name: "fixed", policy: "*farm.fixedSteps", dispatch: "farm.inProcess"},
		{name: "on-policy training", training: &Training{}, policy: "*farm.fixedSteps", dispatch: "farm.inProcess"},
		{name: "overlapped", training: &Training{MaxStaleness: 2}, policy: "*farm.overlappedSteps", dispatch: "farm.inProcess"},
		{name: "queue with staleness", training: &Training{MaxStaleness: 2}, queue: true, policy: "*farm.fixedSteps", dispatch: "farm.queued"},
		{name: "streamed", training: &Training{StreamGroups: true, MaxStaleness: 1}, policy: "*farm.streamer", dispatch: "farm.inProcess"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Training: tt.training, Queue: tt.queue}
			f := &Farm{cfg: cfg}
			fin := &finisher{staleness: 0}
			if tt.training != nil {
				fin.staleness = tt.training.MaxStaleness
			}
			if tt.policy == "*farm.streamer" {
				// The streamed policy starts its dispatcher: give it what it needs.
				f.cfg.BatchSize, f.cfg.GroupSize = 1, 1
				f.pool = pool.New(1)
			}
			p := newPolicyFor(cfg)(context.Background(), f, fin)
			defer p.stop(nil)
			if got := fmt.Sprintf("%T", p); got != tt.policy {
				t.Errorf("policy %s, want %s", got, tt.policy)
			}
			d := dispatcherFor(cfg, f)
			if got := fmt.Sprintf("%T", d); got != tt.dispatch {
				t.Errorf("dispatcher %s, want %s", got, tt.dispatch)
			}
		})
	}
}
