package rollout

import "fmt"

// Mode is the training configuration of a run.
type Mode string

// The modes of the paper's experiments.
const (
	// ModeMGRPO trains planner and executor: both sides' samples are emitted.
	ModeMGRPO Mode = "mgrpo"
	// ModeFrozenSub trains the planner only: executor samples are not emitted.
	ModeFrozenSub Mode = "frozen-sub"
	// ModeSingle is plain GRPO over K rollouts of a single agent.
	ModeSingle Mode = "single"
)

// ParseMode returns the mode named s; the empty string selects ModeMGRPO.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return ModeMGRPO, nil
	case ModeMGRPO, ModeFrozenSub, ModeSingle:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q (want mgrpo, frozen-sub or single)", s)
}

// TrainsExecutor reports whether the mode emits executor samples, which is
// also whether it needs d̄.
func (m Mode) TrainsExecutor() bool { return m == ModeMGRPO }
