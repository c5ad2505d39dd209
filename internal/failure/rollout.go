package failure

// Kind says whose fault a failed rollout, trajectory or turn is, which
// decides what training does with it: a model failure is the policy's own
// doing and is trained as a zero reward; an infra failure (an engine, a
// tool provider, a store or an agent service that did not answer) says
// nothing about the policy, so it is retried and, if it persists, its
// group is kept out of the batch. The empty Kind means no failure.
type Kind string

// The failure kinds.
const (
	KindNone  Kind = ""
	KindInfra Kind = "infra"
	KindModel Kind = "model"
)

// Valid reports whether k is one of the kinds above.
func (k Kind) Valid() bool {
	switch k {
	case KindNone, KindInfra, KindModel:
		return true
	}
	return false
}
