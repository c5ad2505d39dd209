package gateway

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/internal/httpretry"
	"github.com/mgrpo/mgrpo/llm"
)

// fault says whose fault a failed model call was. The gateway stands
// between agent code it did not write and engines it shares with other
// rollouts, so each failure must be blamed on the right side: a prompt over
// the context window or a request the engine refused for its content is
// the agent's (a failed trajectory, trained with reward 0, never retried);
// an engine that did not answer is the cluster's (infra: the rollout is
// retried, its group left out), whatever the agent did afterwards.
type fault struct {
	// cause is the failure cause (internal/failure's table, or
	// engineCause).
	cause failure.Cause
	// agentsFault is set when the agent's request was at fault.
	agentsFault bool
	// endpoint is the engine endpoint that failed, when known.
	endpoint string
	// status is the engine's HTTP status, when it answered one.
	status int
}

// engineCause is the cause of a failed call the client names no cause
// for: the engine's side, as every call failure was before causes.
const engineCause = "engine"

// kind is the fault's failure kind: model for the agent's faults (trained
// as a failed trajectory), infra for the rest.
func (f fault) kind() failure.Kind {
	if f.agentsFault {
		return failure.KindModel
	}
	return failure.KindInfra
}

// agents reports whether the fault is the agent's request's, not the
// engine's.
func (f fault) agents() bool { return f.agentsFault }

// faultOf classifies a failed call's error. Only a request refused for its
// content is the agent's; everything else, a failure the client cannot
// name included, is the engine's.
func faultOf(err error) fault {
	cause, endpoint := llm.Cause(err)
	f := fault{cause: cause, endpoint: endpoint, status: httpretry.Code(err)}
	var bad *requestError
	switch {
	case errors.As(err, &bad):
		f.cause, f.agentsFault = bad.cause, true
	case cause == failure.CauseContextLength:
		f.agentsFault = true
	case cause == failure.CauseEngine4xx && contentRefusal(f.status):
		// The engine refused what the agent asked for, not the run's
		// configuration (a wrong model, route or key is 401/403/404).
		f.cause, f.agentsFault = failure.CauseAgentRequest, true
	case failure.KindOf(cause) == failure.KindModel:
		f.cause = engineCause
	}
	return f
}

// contentRefusal reports whether an engine's status refuses a request for
// its content: malformed, too large or unprocessable.
func contentRefusal(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// requestError is a request the gateway refused itself for its content
// (over a bound): the agent's fault, answered 400 and never forwarded.
type requestError struct {
	// code is the error code of the answer (context_length_exceeded, …).
	code string
	// cause is the trajectory's failure cause (default agent_request).
	cause failure.Cause
	err   error
}

func (e *requestError) Error() string { return e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }

// refuse makes a requestError.
func refuse(code, format string, args ...any) *requestError {
	return &requestError{code: code, cause: failure.CauseAgentRequest, err: fmt.Errorf(format, args...)}
}

// refuseAs makes a requestError of another cause.
func refuseAs(cause failure.Cause, code, format string, args ...any) *requestError {
	e := refuse(code, format, args...)
	e.cause = cause
	return e
}

// agentErrorAnswer is the status and error code that answer the agent for a
// failed call that was its own fault.
func agentErrorAnswer(err error, f fault) (int, string) {
	var bad *requestError
	switch {
	case errors.As(err, &bad):
		return http.StatusBadRequest, bad.code
	case f.cause == failure.CauseContextLength:
		return http.StatusBadRequest, "context_length_exceeded"
	case f.status == http.StatusRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge, "request_too_large"
	}
	return http.StatusBadRequest, "invalid_request_error"
}

// engineFailure returns the first trajectory of a rollout (the planner's,
// then the executors') that failed at the engine, or nil.
func engineFailure(planner *agents.Trajectory, executors []*agents.Trajectory) *agents.Trajectory {
	for _, t := range append([]*agents.Trajectory{planner}, executors...) {
		if t != nil && t.Error != "" && t.FailureKind == failure.KindInfra && t.FailureCause != FailureCause {
			return t
		}
	}
	return nil
}
