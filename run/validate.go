package run

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/tools/search"
)

// name says how a user sets a key: "group_size (--group-size)", or the key
// alone when no flag sets it.
func name(key, flag string) string {
	if flag == "" {
		return key
	}
	return key + " (--" + flag + ")"
}

// problems collects configuration errors.
type problems []error

func (p *problems) add(key, flag, format string, args ...any) {
	*p = append(*p, fmt.Errorf("%s: %s", name(key, flag), fmt.Sprintf(format, args...)))
}

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
		p.add("out", "out", "required: the directory the run writes its steps to")
	}
	if c.Steps < 1 {
		p.add("steps", "steps", "%d: must be at least 1", c.Steps)
	}
	if c.BatchSize < 1 {
		p.add("batch_size", "batch-size", "%d: must be at least 1 (queries per step)", c.BatchSize)
	}
	if c.GroupSize < 1 {
		p.add("group_size", "group-size", "%d: must be at least 1 (rollouts per query; the paper uses 8)", c.GroupSize)
	}
	if n := c.Concurrency.Rollouts(); n < 1 && !c.Concurrency.Auto() {
		p.add("concurrency", "concurrency", "%d: must be at least 1 (rollouts in flight), or auto", n)
	}
	if c.RolloutRetries < 0 {
		p.add("rollout_retries", "rollout-retries", "%d: must not be negative (0: never retry)", c.RolloutRetries)
	}
	if f := c.MaxToolOutageFraction; !(f >= 0 && f <= 1) {
		p.add("max_tool_outage_fraction", "max-tool-outage-fraction", "%v: must be in [0, 1]", f)
	}
	if f := c.MaxFailedFraction; !(f >= 0 && f <= 1) {
		p.add("max_failed_fraction", "max-failed-fraction", "%v: must be in [0, 1]", f)
	}
	if _, err := farm.ParseInfraPolicy(c.OnInfraFailure); err != nil {
		p.add("on_infra_failure", "on-infra-failure", "%v", err)
	}
	for _, r := range []struct {
		key, flag string
		v         float64
	}{{"sim_faults.rate_503", "sim-fault-503", c.SimFaults.Rate503}, {"sim_faults.rate_500", "sim-fault-500", c.SimFaults.Rate500}, {"sim_faults.rate_drop", "sim-fault-drop", c.SimFaults.RateDrop}} {
		if !(r.v >= 0 && r.v <= 1) {
			p.add(r.key, r.flag, "%v: must be in [0, 1]", r.v)
		}
	}
	if c.SimFaults.Rate503+c.SimFaults.Rate500+c.SimFaults.RateDrop > 1 {
		p.add("sim_faults", "sim-fault-503", "the rates sum to more than 1")
	}
	if c.SimFaults.DeathFor.Duration < 0 {
		p.add("sim_faults.endpoint_death", "sim-fault-endpoint-death", "%v: must not be negative (0: never)", c.SimFaults.DeathFor.Duration)
	}
	if c.SimFaults.DeathEvery < 0 {
		p.add("sim_faults.death_every", "sim-fault-death-every", "%d: must not be negative", c.SimFaults.DeathEvery)
	}
	if c.Workers < -1 {
		p.add("workers", "workers", "%d: want -1 (auto), 0 (coordinate only) or the rollouts this process runs", c.Workers)
	}
	if err := CheckStoreURL(c.Store); err != nil {
		p.add("store", "store", "%v", err)
	} else if c.Store == StoreNone && c.Workers >= 0 {
		p.add("workers", "workers", "%d: workers share the run's store; set --store (sqlite://… or redis://…) instead of none", c.Workers)
	}
	if c.Grace.Duration < 0 {
		p.add("grace", "", "%v: must not be negative", c.Grace.Duration)
	}
	if err := c.CheckTimeouts(); err != nil {
		*p = append(*p, err)
	}
}

// checkRewards checks the mode, d̄ and the rewards, returning the mode.
func (c Config) checkRewards(p *problems) rollout.Mode {
	mode, err := rollout.ParseMode(c.Mode)
	if err != nil {
		p.add("mode", "mode", "%q: want mgrpo, frozen-sub or single", c.Mode)
	}
	if _, err := rollout.ParseDBar(c.DBar); err != nil {
		p.add("dbar", "dbar", "%q: want a positive integer or auto", c.DBar)
	}
	if _, err := rollout.ParseExpertFallback(c.Rewards.ExpertFallback); err != nil {
		p.add("rewards.expert_fallback", "expert-fallback", "%q: want format, zero or correct-main", c.Rewards.ExpertFallback)
	}
	if err := c.Rewards.Weights().Validate(); err != nil {
		p.add("rewards", "", "%v", err)
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
		if !slices.Contains(r.want, r.e.Dialect) {
			p.add(r.role+".dialect", r.flag, "%q: want %s", r.e.Dialect, strings.Join(r.want, " or "))
		}
		// A parser the client does not implement, refused by name.
		if _, err := llm.ParseParser(r.e.Parser); r.e.Parser != "" && err != nil {
			p.add(r.role+".parser", r.parserFlag, "%v", err)
		}
	}
	if !c.Sim && c.farmRunsTools() && !slices.Contains(search.Names(), strings.ToLower(strings.TrimSpace(c.Search.Provider))) {
		p.add("search.provider", "search-provider", "%q: want %s", c.Search.Provider, search.NameList())
	}
	c.checkMCP(p)
	if err := c.Prices.Validate(); err != nil {
		*p = append(*p, err)
	}
	switch c.Format {
	case "jsonl", "parquet":
	default:
		p.add("format", "format", "%q: want jsonl or parquet", c.Format)
	}
	*p = append(*p, c.simEndpointConflicts()...)
	*p = append(*p, c.routeURLProblems()...)
	if !c.Sim {
		if c.Tasks == "" {
			p.add("tasks", "tasks", "required without --sim: a JSON Lines file of {id, question, answer}")
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
				p.add(r.key, "", "urls and model required without --sim (--%s-url URL --%s-model NAME)", r.key, r.key)
			}
		}
	}
	switch {
	case c.SimJudge() && !c.Sim:
		p.add("judge.urls", "judge-url", "sim needs --sim (the simulated model plays the judge)")
	case !c.SimJudge() && (len(c.Judge.URLs) == 0) != (c.Judge.Model == ""):
		p.add("judge", "", "give both urls and model (--judge-url, --judge-model), or neither")
	}
	if (len(c.Reasoner.URLs) == 0) != (c.Reasoner.Model == "") {
		p.add("reasoner", "", "give both urls and model, or neither")
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
		p.add("budgets.rollout_timeout", "rollout-timeout", "%v: must be positive (e.g. 30m); a rollout past it ends with what it has", c.Budgets.RolloutTimeout.Duration)
	}
	for _, r := range []struct {
		role    string
		flagged bool
		e       EndpointConfig
	}{{"planner", true, c.Planner}, {"executor", true, c.Executor}, {"reasoner", false, c.Reasoner}, {"judge", false, c.Judge}} {
		p.timeouts(r.role, r.flagged, r.e)
	}
	return errors.Join(p...)
}

// timeouts reports a role's call, attempt and idle timeouts that cannot
// work: zero or negative ones, an attempt timeout not shorter than the call
// timeout, and an idle timeout not shorter than the attempt timeout.
// flagged says whether --call-timeout, --attempt-timeout and
// --idle-timeout set the role's.
func (p *problems) timeouts(role string, flagged bool, e EndpointConfig) {
	callFlag, attemptFlag, idleFlag := "", "", ""
	if flagged {
		callFlag, attemptFlag, idleFlag = "call-timeout", "attempt-timeout", "idle-timeout"
	}
	call, callSet := e.CallTimeout.Value()
	attempt, attemptSet := e.AttemptTimeout.Value()
	idle, idleSet := e.IdleTimeout.Value()
	if idleSet && idle <= 0 {
		p.add(role+".idle_timeout", idleFlag, "%v: must be positive, or auto (60s)", idle)
	}
	if idleSet && attemptSet && idle > 0 && attempt > 0 && idle >= attempt {
		p.add(role+".idle_timeout", idleFlag, "%v: must be shorter than %s %v, which bounds the whole stream",
			idle, name(role+".attempt_timeout", attemptFlag), attempt)
	}
	if callSet && call <= 0 {
		p.add(role+".call_timeout", callFlag, "%v: must be positive, or auto (3 × the attempt timeout)", call)
	}
	if attemptSet && attempt <= 0 {
		p.add(role+".attempt_timeout", attemptFlag, "%v: must be positive, or auto (60s + 100ms × the call's max_tokens)", attempt)
	}
	if callSet && attemptSet && call > 0 && attempt >= call {
		p.add(role+".attempt_timeout", attemptFlag, "%v: must be shorter than %s %v, which covers every attempt of a call",
			attempt, name(role+".call_timeout", callFlag), call)
	}
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
