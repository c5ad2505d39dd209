package llm

import "github.com/mgrpo/mgrpo/internal/problems"

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
