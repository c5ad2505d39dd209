package llm

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/internal/httpretry"
)

// Cause returns the failure cause of an error a call returned (see
// internal/failure's class table) and the endpoint it names ("" when
// none). Every call error is an infrastructure failure except a prompt
// the server refused as longer than the context, which the model's own
// output made so. A context cancellation or deadline of the caller is not
// the call's to judge: it gives CauseInterrupted, and the caller, who
// knows why its context ended, decides.
func Cause(err error) (cause failure.Cause, endpoint string) {
	var ge *GiveUpError
	if errors.As(err, &ge) {
		endpoint = ge.Endpoint
	}
	var de *DecodeError
	if errors.As(err, &de) && endpoint == "" {
		endpoint = de.Endpoint
	}
	var se *httpretry.StatusError
	errors.As(err, &se)
	switch {
	case se != nil && se.Code == http.StatusBadRequest && contextLengthRefusal(se.Error()):
		return failure.CauseContextLength, endpoint
	case errors.Is(err, ErrAttemptTimeout), errors.Is(err, ErrIdleTimeout):
		return failure.CauseEngineTimeout, endpoint
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return failure.CauseInterrupted, endpoint
	case se != nil && se.Code == http.StatusTooManyRequests:
		return failure.CauseEngine429, endpoint
	case se != nil && se.Code >= 500:
		return failure.CauseEngine5xx, endpoint
	case se != nil:
		return failure.CauseEngine4xx, endpoint
	case errors.Is(err, ErrAborted):
		return failure.CauseServerAbort, endpoint
	case de != nil, errors.Is(err, ErrStreamEnded):
		return failure.CauseStreamCut, endpoint
	case ge != nil:
		return failure.CauseEngineUnreachable, endpoint
	}
	return failure.CauseOther, endpoint
}

// contextLengthRefusal reports whether a 400's message is vLLM's or
// SGLang's refusal of a prompt longer than the model's context.
func contextLengthRefusal(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "context length") || strings.Contains(m, "context_length") || strings.Contains(m, "maximum context")
}
