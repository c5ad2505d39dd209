package farm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mgrpo/mgrpo/store"
)

// ErrNoRun marks a store that holds no run of that name, or several runs
// and no name (FindRun); its message is its cause's.
var ErrNoRun = errors.New("no such run in the store")

// noRunError is an ErrNoRun whose message is its cause's.
type noRunError struct{ err error }

func (e noRunError) Error() string   { return e.err.Error() }
func (e noRunError) Unwrap() []error { return []error{e.err, ErrNoRun} }

// FindRun returns the record of the run named, or of the store's only run
// when name is empty (a worker, the executor side of a decoupled run).
func FindRun(ctx context.Context, st store.Store, name string) (store.RunRecord, error) {
	if name != "" {
		rec, err := st.Run(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return rec, noRunError{fmt.Errorf("--run %q: no such run in the store (start it with `mgrpo rollout --store …`)", name)}
		}
		return rec, err
	}
	ids, err := st.RunIDs(ctx)
	if err != nil {
		return store.RunRecord{}, err
	}
	switch len(ids) {
	case 0:
		return store.RunRecord{}, noRunError{errors.New("the store holds no run yet: start the coordinator (`mgrpo rollout --store …`) first, or name the run with --run")}
	case 1:
		return st.Run(ctx, ids[0])
	}
	slices.Sort(ids)
	return store.RunRecord{}, noRunError{fmt.Errorf("the store holds %d runs (%s): choose one with --run", len(ids), strings.Join(ids, ", "))}
}
