package run

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/tools"
)

// probeTimeout bounds each probe of preflight: a healthy server answers a
// one-token call or a search in well under it.
const probeTimeout = 30 * time.Second

// probeQuery is the search preflight sends.
const probeQuery = "mgrpo preflight probe"

// probe checks, before any rollout, what a misconfigured real run would
// otherwise find out one failed rollout at a time (issue: a wrong model, a
// wrong dialect or a dead search URL ran a whole step of failures and
// exited 0): each model role's endpoints serve its model and answer a
// one-token call in its dialect (with token ids where the run captures
// them), the judge's serve its model, and the search provider answers one
// query. Every problem is reported at once, each naming the flag that
// fixes it; the error wraps ErrConfig.
func probe(ctx context.Context, c Config, clients map[string]*llm.Client, toolbox *tools.Registry) error {
	var problems []string
	for _, role := range []string{"planner", "executor", "judge"} {
		cl, ok := clients[role]
		if !ok {
			continue
		}
		e := c.endpoint(role)
		if err := cl.PreflightModel(ctx); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v: set %s to one of them", name(role+".model", flagOf(role, "model")), err, flagOrKey(role, "model")))
			continue
		}
		if role == "judge" {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := cl.PreflightCall(pctx)
		cancel()
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: a one-token call in dialect %s failed: %v%s", name(role+".dialect", "dialect"), e.Dialect, err, llm.DialectHint(e.Dialect, err)))
		}
	}
	if toolbox != nil {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		args, _ := json.Marshal(map[string]any{"query": []string{probeQuery}})
		obs := toolbox.Call(pctx, "search", args)
		cancel()
		if obs.Meta.Failed() {
			where := c.Search.URL
			if where == "" {
				where = "its default URL"
			}
			problems = append(problems, fmt.Sprintf("%s: %s at %s did not answer a probe query (%s: %s): check %s, %s and the provider's API key variable",
				name("search.provider", "search-provider"), c.Search.Provider, redact.URL(where), obs.Meta.Class, obs.Meta.Error,
				"--search-provider", "--search-url"))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: before starting, the endpoints answered what this configuration cannot use:\n%s", ErrConfig, strings.Join(problems, "\n"))
	}
	return nil
}

// endpoint returns the configuration of a model role.
func (c Config) endpoint(role string) EndpointConfig {
	switch role {
	case "planner":
		return c.Planner
	case "executor":
		return c.Executor
	case "judge":
		return c.Judge
	}
	return c.Reasoner
}

// flagOf returns the flag that sets a role's key ("planner", "model" →
// "planner-model"), "" when none does.
func flagOf(role, key string) string {
	for _, f := range Flags(ScopeAgent) {
		for _, k := range f.Keys {
			if k == role+"."+key {
				return f.Name
			}
		}
	}
	return ""
}

// flagOrKey names how a user sets a role's key: its flag, else its key.
func flagOrKey(role, key string) string {
	if f := flagOf(role, key); f != "" {
		return "--" + f
	}
	return role + "." + key
}
