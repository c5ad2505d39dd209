package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// The Messages API answers errors in Anthropic's shape,
// {"type":"error","error":{"type":…,"message":…}}, which its SDK reads.
// The gateway's shared steps (authorization, capability, bounds, trajectory,
// engine faults) answer in OpenAI's shape; anthropicErrors rewrites those
// answers on the Messages routes, so the steps stay one code path.

// messagesRoute reports whether path is a Messages API route.
func messagesRoute(path string) bool {
	return strings.HasPrefix(path, "/r/") && (strings.HasSuffix(path, "/v1/messages") || strings.HasSuffix(path, "/v1/messages/count_tokens"))
}

// anthropicErrors is a ResponseWriter that holds back an error answer
// (status 400 and over) and writes it in Anthropic's shape on finish.
type anthropicErrors struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (a *anthropicErrors) WriteHeader(status int) {
	if status >= 400 {
		a.status = status
		return
	}
	a.ResponseWriter.WriteHeader(status)
}

func (a *anthropicErrors) Write(p []byte) (int, error) {
	if a.status != 0 {
		return a.body.Write(p)
	}
	return a.ResponseWriter.Write(p)
}

// Flush passes a stream's events on.
func (a *anthropicErrors) Flush() {
	if f, ok := a.ResponseWriter.(http.Flusher); ok && a.status == 0 {
		f.Flush()
	}
}

// finish writes a held error answer in Anthropic's shape.
func (a *anthropicErrors) finish() {
	if a.status == 0 {
		return
	}
	var e errorBody
	msg := strings.TrimSpace(a.body.String())
	if json.Unmarshal(a.body.Bytes(), &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
		if e.Error.Param != nil {
			msg = strings.TrimPrefix(msg, *e.Error.Param+": ")
			msg = *e.Error.Param + ": " + msg
		}
	}
	var out anthropicError
	out.Type = "error"
	out.Error.Type = anthropicErrorType(a.status)
	out.Error.Message = msg
	data, _ := json.Marshal(out)
	a.ResponseWriter.Header().Set("Content-Type", "application/json")
	a.ResponseWriter.WriteHeader(a.status)
	_, _ = a.ResponseWriter.Write(append(data, '\n'))
}

// anthropicErrorType is Anthropic's error type of a status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusConflict, http.StatusRequestTimeout:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable:
		return "overloaded_error"
	}
	return "api_error"
}
