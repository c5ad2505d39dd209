package run

import (
	"errors"
	"fmt"
	"strings"
)

// simEndpointConflicts returns a problem for every planner or executor
// endpoint or model given together with --sim. --sim starts the simulated
// world's servers and points both roles at them, so an endpoint the user
// named would be silently replaced (its requests sent to the sim with a
// model it does not serve, each one failing as an infra error). The sim's
// own model name is not a conflict.
func (c Config) simEndpointConflicts() []error {
	if !c.Sim {
		return nil
	}
	var out []error
	for _, r := range []struct {
		role string
		e    EndpointConfig
	}{{"planner", c.Planner}, {"executor", c.Executor}} {
		if len(r.e.URLs) > 0 {
			out = append(out, fmt.Errorf("--sim and --%s-url (%s.urls) %s: --sim serves every role from the simulated world; drop --sim to use that server (preflight checks it), or drop --%s-url",
				r.role, r.role, strings.Join(r.e.URLs, ","), r.role))
		}
		if r.e.Model != "" && r.e.Model != SimModel {
			out = append(out, fmt.Errorf("--sim and --%s-model (%s.model) %q: the simulated world serves only %q; drop --%s-model, or drop --sim to run against a server that serves %q",
				r.role, r.role, r.e.Model, SimModel, r.role, r.e.Model))
		}
	}
	return out
}

// checkSimEndpoints is simEndpointConflicts as one configuration error.
func (c Config) checkSimEndpoints() error {
	if err := errors.Join(c.simEndpointConflicts()...); err != nil {
		return fmt.Errorf("%w:\n%w", ErrConfig, err)
	}
	return nil
}
