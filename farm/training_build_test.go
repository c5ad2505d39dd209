package farm

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/weightsync"
)

// buildTrainers records the trainers the farmtest:// backend opened.
var buildTrainers = struct {
	sync.Mutex
	opened []*buildTrainer
}{}

// buildTrainer is a trainer of the farmtest:// scheme: its start fails
// when its URL's host is "down".
type buildTrainer struct {
	opts   trainerbridge.Options
	down   bool
	closed bool
}

func (b *buildTrainer) Start(context.Context) error {
	if b.down {
		return errors.New("down")
	}
	return nil
}
func (b *buildTrainer) Train(context.Context, trainerbridge.Batch) (trainerbridge.StepResult, error) {
	return trainerbridge.StepResult{}, nil
}
func (b *buildTrainer) Close() error { b.closed = true; return nil }

func init() {
	trainerbridge.Register("farmtest", func(_ context.Context, u *url.URL, o trainerbridge.Options) (trainerbridge.Trainer, error) {
		tr := &buildTrainer{opts: o, down: u.Host == "down"}
		buildTrainers.Lock()
		buildTrainers.opened = append(buildTrainers.opened, tr)
		buildTrainers.Unlock()
		return tr, nil
	})
}

// openedSince returns the trainers opened after the first n.
func openedSince(n int) []*buildTrainer {
	buildTrainers.Lock()
	defer buildTrainers.Unlock()
	return append([]*buildTrainer(nil), buildTrainers.opened[n:]...)
}

func openedCount() int {
	buildTrainers.Lock()
	defer buildTrainers.Unlock()
	return len(buildTrainers.opened)
}

func trainingSetup(mode rollout.Mode) TrainingSetup {
	pt, et := 0.7, 0.9
	return TrainingSetup{Run: "r", Seed: 7, Mode: mode,
		Train: TrainConfig{PlannerTrainer: "farmtest://p", ExecutorTrainer: "farmtest://e", BaseModelPlanner: "P", BaseModelExecutor: "E",
			WeightSync: weightsync.KindNone, MaxStaleness: 1},
		Planner:  llm.EndpointConfig{URLs: []string{"http://planner"}, Temperature: &pt},
		Executor: llm.EndpointConfig{URLs: []string{"http://executor"}, Temperature: &et}}
}

func TestTrainingSides(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mode      rollout.Mode
		role      string
		want      []string // role@first endpoint:temperature
		wantPeers []rollout.Role
	}{
		{"mgrpo trains both", rollout.ModeMGRPO, "", []string{"planner@http://planner:0.7", "executor@http://executor:0.9"}, nil},
		{"frozen-sub trains the planner", rollout.ModeFrozenSub, "", []string{"planner@http://planner:0.7"}, nil},
		{"single trains the executor endpoints' model", rollout.ModeSingle, "", []string{"planner@http://executor:0.9"}, nil},
		{"planner side waits for its peer", rollout.ModeMGRPO, "planner", []string{"planner@http://planner:0.7"}, []rollout.Role{rollout.RoleExecutor}},
		{"executor side", rollout.ModeMGRPO, "executor", []string{"executor@http://executor:0.9"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := trainingSetup(tc.mode)
			s.Train.Role = tc.role
			sides, peers := trainingSides(s)
			var got []string
			for _, sd := range sides {
				got = append(got, fmt.Sprintf("%s@%s:%v", sd.role, sd.endpoints[0], *sd.temperature))
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("sides %v, want %v", got, tc.want)
			}
			if len(peers) != len(tc.wantPeers) || (len(peers) > 0 && peers[0] != tc.wantPeers[0]) {
				t.Errorf("peers %v, want %v", peers, tc.wantPeers)
			}
		})
	}
}

func TestBuildTrainingOpensEachTrainedRole(t *testing.T) {
	n := openedCount()
	tr, err := BuildTraining(context.Background(), trainingSetup(rollout.ModeMGRPO), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	opened := openedSince(n)
	if len(opened) != 2 || len(tr.Trainers) != 2 || len(tr.Syncers) != 0 {
		t.Fatalf("opened %d trainers, farm has %d trainers and %d syncers; want 2, 2 and 0 (weight_sync none)", len(opened), len(tr.Trainers), len(tr.Syncers))
	}
	p := opened[0].opts
	if p.Run != "r" || p.Role != rollout.RolePlanner || p.BaseModel != "P" || p.Seed != 7 || p.Temperature != 0.7 {
		t.Errorf("planner trainer options %+v", p)
	}
	if e := opened[1].opts; e.Role != rollout.RoleExecutor || e.BaseModel != "E" || e.Temperature != 0.9 {
		t.Errorf("executor trainer options %+v", e)
	}
	if tr.MaxStaleness != 1 {
		t.Errorf("MaxStaleness %d, want the settings' 1", tr.MaxStaleness)
	}
	tr.Close()
	for _, o := range opened {
		if !o.closed {
			t.Errorf("%s trainer not closed by Close", o.opts.Role)
		}
	}
}

func TestBuildTrainingClosesWhatItOpenedOnError(t *testing.T) {
	t.Run("a trainer that does not start", func(t *testing.T) {
		n := openedCount()
		s := trainingSetup(rollout.ModeMGRPO)
		s.Train.ExecutorTrainer = "farmtest://down"
		if _, err := BuildTraining(context.Background(), s, nil, nil); err == nil || errors.Is(err, ErrTrainingConfig) {
			t.Fatalf("err = %v, want the executor trainer's start error, not a configuration error", err)
		}
		for _, o := range openedSince(n) {
			if !o.closed {
				t.Errorf("%s trainer left open", o.opts.Role)
			}
		}
	})
	t.Run("a weight sync the settings cannot build", func(t *testing.T) {
		n := openedCount()
		s := trainingSetup(rollout.ModeFrozenSub)
		s.Train.WeightSync = "rsync"
		_, err := BuildTraining(context.Background(), s, nil, nil)
		if !errors.Is(err, ErrTrainingConfig) || !strings.HasPrefix(err.Error(), "planner weight sync: ") {
			t.Fatalf("err = %v, want ErrTrainingConfig reading \"planner weight sync: …\"", err)
		}
		if o := openedSince(n); len(o) != 1 || !o[0].closed {
			t.Errorf("the planner trainer was not closed after the failed sync")
		}
	})
}
