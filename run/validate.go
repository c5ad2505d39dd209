package run

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mgrpo/mgrpo/farm"
	upfrontlist "github.com/mgrpo/mgrpo/internal/problems"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/tools/search"
)

// name says how a user sets a key (problems.Name).
func name(key, flag string) string { return upfrontlist.Name(key, flag) }

// problems collects configuration errors (problems.List).
type problems = upfrontlist.List

// Validate checks the whole configuration before anything runs: required
// keys and their combinations, sizes, and the values the farm parses (mode,
// dbar, reward weights, expert fallback). It returns every problem at once,
// each naming the key and its flag and saying how to fix it, joined into an
// error wrapping ErrConfig; nil when the configuration is usable.
func (c Config) Validate() error {
	var p problems
	c.checkRun(&p)
	mode := c.checkRewards(&p)
	c.checkEndpoints(&p, mode)
	if err := errors.Join(p...); err != nil {
		return fmt.Errorf("%w:\n%w", ErrConfig, err)
	}
	return nil
}

// checkRun checks the run's shape: its out directory, steps, batch and
// group sizes, concurrency, failure policies, the sim's faults, the
// workers and store, the grace and the timeouts.
func (c Config) checkRun(p *problems) {
	if c.Out == "" {
		p.Add("out", "out", "required: the directory the run writes its steps to")
	}
	if c.Steps < 1 {
		p.Add("steps", "steps", "%d: must be at least 1", c.Steps)
	}
	if c.BatchSize < 1 {
		p.Add("batch_size", "batch-size", "%d: must be at least 1 (queries per step)", c.BatchSize)
	}
	if c.GroupSize < 1 {
		p.Add("group_size", "group-size", "%d: must be at least 1 (rollouts per query; the paper uses 8)", c.GroupSize)
	}
	if n := c.Concurrency.Rollouts(); n < 1 && !c.Concurrency.Auto() {
		p.Add("concurrency", "concurrency", "%d: must be at least 1 (rollouts in flight), or auto", n)
	}
	if c.RolloutRetries < 0 {
		p.Add("rollout_retries", "rollout-retries", "%d: must not be negative (0: never retry)", c.RolloutRetries)
	}
	if f := c.MaxToolOutageFraction; !(f >= 0 && f <= 1) {
		p.Add("max_tool_outage_fraction", "max-tool-outage-fraction", "%v: must be in [0, 1]", f)
	}
	if f := c.MaxFailedFraction; !(f >= 0 && f <= 1) {
		p.Add("max_failed_fraction", "max-failed-fraction", "%v: must be in [0, 1]", f)
	}
	if _, err := farm.ParseInfraPolicy(c.OnInfraFailure); err != nil {
		p.Add("on_infra_failure", "on-infra-failure", "%v", err)
	}
	*p = append(*p, c.SimFaults.Check()...)
	if c.Workers < -1 {
		p.Add("workers", "workers", "%d: want -1 (auto), 0 (coordinate only) or the rollouts this process runs", c.Workers)
	}
	if err := CheckStoreURL(c.Store); err != nil {
		p.Add("store", "store", "%v", err)
	} else if c.Store == StoreNone && c.Workers >= 0 {
		p.Add("workers", "workers", "%d: workers share the run's store; set --store (sqlite://… or redis://…) instead of none", c.Workers)
	}
	if c.Grace.Duration < 0 {
		p.Add("grace", "", "%v: must not be negative", c.Grace.Duration)
	}
	if err := c.CheckTimeouts(); err != nil {
		*p = append(*p, err)
	}
}

// checkRewards checks the mode, d̄ and the rewards, returning the mode.
func (c Config) checkRewards(p *problems) rollout.Mode {
	mode, err := rollout.ParseMode(c.Mode)
	if err != nil {
		p.Add("mode", "mode", "%q: want mgrpo, frozen-sub or single", c.Mode)
	}
	if _, err := rollout.ParseDBar(c.DBar); err != nil {
		p.Add("dbar", "dbar", "%q: want a positive integer or auto", c.DBar)
	}
	if _, err := rollout.ParseExpertFallback(c.Rewards.ExpertFallback); err != nil {
		p.Add("rewards.expert_fallback", "expert-fallback", "%q: want format, zero or correct-main", c.Rewards.ExpertFallback)
	}
	if err := c.Rewards.Weights().Validate(); err != nil {
		p.Add("rewards", "", "%v", err)
	}
	return mode
}

// checkEndpoints checks the models' dialects and endpoints, the search
// provider, the MCP servers, the prices, the sample format, the tasks,
// the judge, the reasoner and the gateway.
func (c Config) checkEndpoints(p *problems, mode rollout.Mode) {
	for _, r := range []struct {
		role, flag, parserFlag string
		e                      EndpointConfig
		want                   []string
	}{
		{"planner", "dialect", "planner-parser", c.Planner, []string{llm.DialectVLLM, llm.DialectSGLang}},
		{"executor", "dialect", "executor-parser", c.Executor, []string{llm.DialectVLLM, llm.DialectSGLang}},
		{"reasoner", "", "", c.Reasoner, []string{llm.DialectVLLM, llm.DialectSGLang, llm.DialectOpenAI}},
		{"judge", "", "judge-parser", c.Judge, []string{llm.DialectVLLM, llm.DialectSGLang, llm.DialectOpenAI}},
	} {
		*p = append(*p, r.e.CheckDialect(r.role, r.flag, r.parserFlag, r.want)...)
	}
	if !c.Sim && c.farmRunsTools() && !slices.Contains(search.Names(), strings.ToLower(strings.TrimSpace(c.Search.Provider))) {
		p.Add("search.provider", "search-provider", "%q: want %s", c.Search.Provider, search.NameList())
	}
	c.checkMCP(p)
	if err := c.Prices.Validate(); err != nil {
		*p = append(*p, err)
	}
	switch c.Format {
	case "jsonl", "parquet":
	default:
		p.Add("format", "format", "%q: want jsonl or parquet", c.Format)
	}
	*p = append(*p, c.simEndpointConflicts()...)
	*p = append(*p, c.routeURLProblems()...)
	if !c.Sim {
		if c.Tasks == "" {
			p.Add("tasks", "tasks", "required without --sim: a JSON Lines file of {id, question, answer}")
		}
		roles := []struct {
			key string
			e   EndpointConfig
		}{{"executor", c.Executor}}
		if mode != rollout.ModeSingle {
			roles = append(roles, struct {
				key string
				e   EndpointConfig
			}{"planner", c.Planner})
		}
		for _, r := range roles {
			if len(r.e.URLs) == 0 || r.e.Model == "" {
				p.Add(r.key, "", "urls and model required without --sim (--%s-url URL --%s-model NAME)", r.key, r.key)
			}
		}
	}
	switch {
	case c.SimJudge() && !c.Sim:
		p.Add("judge.urls", "judge-url", "sim needs --sim (the simulated model plays the judge)")
	case !c.SimJudge() && (len(c.Judge.URLs) == 0) != (c.Judge.Model == ""):
		p.Add("judge", "", "give both urls and model (--judge-url, --judge-model), or neither")
	}
	if (len(c.Reasoner.URLs) == 0) != (c.Reasoner.Model == "") {
		p.Add("reasoner", "", "give both urls and model, or neither")
	}
	if err := c.CheckGateway(); err != nil {
		*p = append(*p, err)
	}
}

// CheckTimeouts reports every timeout of c that cannot work, each naming
// its key and flag: a rollout timeout that is not positive, and per role a
// call or attempt timeout that is zero or negative or an attempt timeout
// not shorter than the call timeout. Validate includes it; commands that do
// not validate a whole run configuration (eval) call it alone.
func (c Config) CheckTimeouts() error {
	var p problems
	if c.Budgets.RolloutTimeout.Duration <= 0 {
		p.Add("budgets.rollout_timeout", "rollout-timeout", "%v: must be positive (e.g. 30m); a rollout past it ends with what it has", c.Budgets.RolloutTimeout.Duration)
	}
	for _, r := range []struct {
		role    string
		flagged bool
		e       EndpointConfig
	}{{"planner", true, c.Planner}, {"executor", true, c.Executor}, {"reasoner", false, c.Reasoner}, {"judge", false, c.Judge}} {
		p = append(p, r.e.CheckTimeouts(r.role, r.flagged)...)
	}
	return errors.Join(p...)
}

// CheckTasks reports, wrapping ErrConfig, what makes tasks unusable for
// this configuration: a step takes batch_size distinct tasks.
func (c Config) CheckTasks(tasks []farm.Task, source string) error {
	if len(tasks) < c.BatchSize {
		return fmt.Errorf("%w: %s: %d: more than the %d tasks of %s; a step would hold a question twice (lower --batch-size or add tasks)",
			ErrConfig, name("batch_size", "batch-size"), c.BatchSize, len(tasks), source)
	}
	return nil
}

// SimJudge reports whether the judge is the simulated world's model
// (--judge-url sim), which plays the project's judge prompts offline.
func (c Config) SimJudge() bool {
	return len(c.Judge.URLs) == 1 && c.Judge.URLs[0] == "sim"
}
