package llm

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/mgrpo/mgrpo/internal/problems"
)

// CheckTimeouts reports e's call, attempt and idle timeouts that cannot
// work, each naming role's key: zero or negative ones, an attempt timeout
// not shorter than the call timeout, and an idle timeout not shorter than
// the attempt timeout. flagged says whether --call-timeout,
// --attempt-timeout and --idle-timeout set the role's (and are named).
func (e EndpointConfig) CheckTimeouts(role string, flagged bool) []error {
	var p problems.List
	callFlag, attemptFlag, idleFlag := "", "", ""
	if flagged {
		callFlag, attemptFlag, idleFlag = "call-timeout", "attempt-timeout", "idle-timeout"
	}
	call, callSet := e.CallTimeout.Value()
	attempt, attemptSet := e.AttemptTimeout.Value()
	idle, idleSet := e.IdleTimeout.Value()
	if idleSet && idle <= 0 {
		p.Add(role+".idle_timeout", idleFlag, "%v: must be positive, or auto (60s)", idle)
	}
	if idleSet && attemptSet && idle > 0 && attempt > 0 && idle >= attempt {
		p.Add(role+".idle_timeout", idleFlag, "%v: must be shorter than %s %v, which bounds the whole stream",
			idle, problems.Name(role+".attempt_timeout", attemptFlag), attempt)
	}
	if callSet && call <= 0 {
		p.Add(role+".call_timeout", callFlag, "%v: must be positive, or auto (3 × the attempt timeout)", call)
	}
	if attemptSet && attempt <= 0 {
		p.Add(role+".attempt_timeout", attemptFlag, "%v: must be positive, or auto (60s + 100ms × the call's max_tokens)", attempt)
	}
	if callSet && attemptSet && call > 0 && attempt >= call {
		p.Add(role+".attempt_timeout", attemptFlag, "%v: must be shorter than %s %v, which covers every attempt of a call",
			attempt, problems.Name(role+".call_timeout", callFlag), call)
	}
	return p
}

// routeSuffixes are the routes users paste whole where mgrpo wants a base
// URL: the client adds them itself, so a full route makes every call (and
// the /health probe) 404.
var routeSuffixes = []string{"/chat/completions", "/completions", "/models", "/generate", "/health", "/embeddings", "/responses"}

// CheckRouteURLs returns a problem, with the base URL to give, for every
// URL of e that ends in a route, naming role's urls key (and flag, "" for
// none).
func (e EndpointConfig) CheckRouteURLs(role, flag string) []error {
	var out []error
	for _, raw := range e.URLs {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		path := strings.TrimSuffix(u.Path, "/")
		for _, suf := range routeSuffixes {
			if strings.HasSuffix(path, suf) {
				base := *u
				base.Path = strings.TrimSuffix(path, suf)
				base.RawQuery = ""
				out = append(out, fmt.Errorf("%s: %s is a route, not a base URL: give %s (the client adds %s itself)", problems.Name(role+".urls", flag), raw, base.String(), suf))
				break
			}
		}
	}
	return out
}

// CheckDialect reports a dialect of e that is not one of want and a
// parser the client does not implement, naming role's keys (and the
// flags dialectFlag and parserFlag, "" for none).
func (e EndpointConfig) CheckDialect(role, dialectFlag, parserFlag string, want []string) []error {
	var p problems.List
	if !slices.Contains(want, e.Dialect) {
		p.Add(role+".dialect", dialectFlag, "%q: want %s", e.Dialect, strings.Join(want, " or "))
	}
	// A parser the client does not implement, refused by name.
	if _, err := ParseParser(e.Parser); e.Parser != "" && err != nil {
		p.Add(role+".parser", parserFlag, "%v", err)
	}
	return p
}

// CheckLogprobs reports, for role, a logprobs mode of e that is not raw
// or processed, or logprobs that would not describe the distribution e's
// sampling draws from on a server of its dialect (LogprobsMismatch).
func (e EndpointConfig) CheckLogprobs(role string) []error {
	var p problems.List
	switch e.LogprobsMode {
	case "", LogprobsRaw, LogprobsProcessed:
	default:
		p.Add(role+".logprobs_mode", "", "%q: want raw or processed", e.LogprobsMode)
		return p
	}
	if msg := LogprobsMismatch(e.Dialect, e.LogprobsMode == LogprobsProcessed, e.Sampling(), role); msg != "" {
		p.Add(role, "", "%s", msg)
	}
	return p
}
