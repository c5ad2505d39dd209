package policy

import "fmt"

// Skills are the knobs of the scripted model. Probabilities are per
// opportunity (per turn, per call, per fact read), so the figures they
// produce over a whole task compound; DefaultSkills gives a model that
// solves a clear but partial share of the synthetic web's questions.
type Skills struct {
	// DelegateHop, DelegateChain and CrossCheck are the planner's relative
	// weights (not necessarily summing to 1) for how it delegates the next
	// unresolved hop: one hop as a one-relation subtask, the whole remaining
	// chain as one subtask, or the same hop twice in one turn to cross-check
	// the executors. Each is in [0,1] and at least one must be positive.
	DelegateHop   float64
	DelegateChain float64
	CrossCheck    float64
	// Guess is the probability, in [0,1], that the planner answers on its
	// first turn without delegating anything (a guess, almost always wrong).
	Guess float64
	// Retry is the probability, in [0,1], that the planner delegates a hop
	// again after an executor reported a miss for it, instead of giving up
	// and answering its best guess.
	Retry float64
	// PreferMajority is the probability, in [0,1], that a reader facing
	// contradicting facts for one hop takes the majority (the first on a
	// tie) rather than a minority fact.
	PreferMajority float64
	// Sloppiness is the probability, in [0,1], that an executor accepts a
	// fact about a near-namesake (a distractor such as "Velmora Lab" for
	// "Velmora Labs") when it has no fact about the exact entity, and that
	// it reads a snippet sentence cut short by an ellipsis as a whole fact.
	Sloppiness float64
	// SnippetShortcut is the probability, in [0,1], that an executor uses a
	// fact sentence seen in a search snippet without visiting the page.
	SnippetShortcut float64
	// PickBest is the probability, in [0,1], that an executor visits the
	// most relevant unvisited search result rather than another plausible
	// one.
	PickBest float64
	// VisitTwo is the probability, in [0,1], that an executor visits two
	// result pages in one call when two candidates are available.
	VisitTwo float64
	// MaxQueries is the most query strings, in 1..3, an executor puts into
	// one search call.
	MaxQueries int
	// MalformedCall is the probability, in [0,1], that a tool call is
	// emitted malformed (truncated JSON, empty or non-object arguments).
	MalformedCall float64
	// FormatError is the probability, in [0,1], that a final answer that
	// should be wrapped in <answer> tags is written without them.
	FormatError float64
	// PlannerTurns is the planner's budget of assistant turns, in 1..64;
	// on its last turn it answers its best guess.
	PlannerTurns int
	// ExecutorTurns is the executor's budget of assistant turns, in 1..64;
	// on its last turn it reports what it found and what it missed.
	ExecutorTurns int
	// NoReasoning turns the short <think> plan of each turn off.
	NoReasoning bool
}

// DefaultSkills returns a fallible but useful model: with it, about two
// thirds of the synthetic web's rollouts end correct, and the K rollouts of
// one question differ in answers, delegations and rewards.
func DefaultSkills() Skills {
	return Skills{
		DelegateHop:     0.6,
		DelegateChain:   0.25,
		CrossCheck:      0.15,
		Guess:           0.15,
		Retry:           0.7,
		PreferMajority:  0.8,
		Sloppiness:      0.6,
		SnippetShortcut: 0.5,
		PickBest:        0.5,
		VisitTwo:        0.3,
		MaxQueries:      2,
		MalformedCall:   0.04,
		FormatError:     0.04,
		PlannerTurns:    10,
		ExecutorTurns:   8,
	}
}

// PerfectSkills returns a model that never errs by choice: it delegates hop
// by hop, never guesses, never accepts a distractor, never emits malformed
// calls, and has generous budgets. Tests use it to show the tasks are
// solvable.
func PerfectSkills() Skills {
	return Skills{
		DelegateHop:     1,
		Retry:           1,
		PreferMajority:  1,
		SnippetShortcut: 1,
		PickBest:        1,
		VisitTwo:        0,
		MaxQueries:      3,
		PlannerTurns:    24,
		ExecutorTurns:   16,
	}
}

// Validate reports the first field outside its range, naming the field and
// the range it must lie in.
func (s Skills) Validate() error {
	probs := []struct {
		name string
		v    float64
	}{
		{"DelegateHop", s.DelegateHop},
		{"DelegateChain", s.DelegateChain},
		{"CrossCheck", s.CrossCheck},
		{"Guess", s.Guess},
		{"Retry", s.Retry},
		{"PreferMajority", s.PreferMajority},
		{"Sloppiness", s.Sloppiness},
		{"SnippetShortcut", s.SnippetShortcut},
		{"PickBest", s.PickBest},
		{"VisitTwo", s.VisitTwo},
		{"MalformedCall", s.MalformedCall},
		{"FormatError", s.FormatError},
	}
	for _, p := range probs {
		// The negated comparison also rejects NaN.
		if !(p.v >= 0 && p.v <= 1) {
			return fmt.Errorf("skill %s = %v: must be in [0,1]", p.name, p.v)
		}
	}
	if s.DelegateHop+s.DelegateChain+s.CrossCheck == 0 {
		return fmt.Errorf("skills DelegateHop, DelegateChain, CrossCheck: at least one must be positive")
	}
	ints := []struct {
		name     string
		v, lo, h int
	}{
		{"MaxQueries", s.MaxQueries, 1, 3},
		{"PlannerTurns", s.PlannerTurns, 1, 64},
		{"ExecutorTurns", s.ExecutorTurns, 1, 64},
	}
	for _, n := range ints {
		if n.v < n.lo || n.v > n.h {
			return fmt.Errorf("skill %s = %d: must be in %d..%d", n.name, n.v, n.lo, n.h)
		}
	}
	return nil
}
