package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// apiError is a request failure with the HTTP status and OpenAI error type a
// real server would report.
type apiError struct {
	status  int
	errType string
	message string
	param   string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.errType, e.message) }

// badRequest returns a 400 BadRequestError.
func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, errType: "BadRequestError", message: fmt.Sprintf(format, args...)}
}

// errorTypeFor names the OpenAI-style error type of an HTTP status, as vLLM
// and SGLang do (the Python exception class name).
func errorTypeFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequestError"
	case http.StatusNotFound:
		return "NotFoundError"
	case http.StatusRequestEntityTooLarge:
		return "BadRequestError"
	case http.StatusTooManyRequests:
		return "RateLimitError"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableError"
	default:
		return "InternalServerError"
	}
}

// vllmErrorBody is vLLM's ErrorResponse: {"error": {message, type, param, code}}.
type vllmErrorBody struct {
	Error vllmErrorInfo `json:"error"`
}

type vllmErrorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// sglangErrorBody is SGLang's OpenAI-route ErrorResponse, a flat object.
type sglangErrorBody struct {
	Object  string  `json:"object"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// sglangNativeErrorBody is what SGLang's native routes (/generate) return:
// {"error": {"message": …}}.
type sglangNativeErrorBody struct {
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

// errorBody renders e in the dialect's OpenAI-route shape.
func (s *Server) errorBody(e *apiError) any {
	var param *string
	if e.param != "" {
		p := e.param
		param = &p
	}
	if s.cfg.Dialect == DialectSGLang {
		return sglangErrorBody{Object: "error", Message: e.message, Type: e.errType, Param: param, Code: e.status}
	}
	return vllmErrorBody{Error: vllmErrorInfo{Message: e.message, Type: e.errType, Param: param, Code: e.status}}
}

// writeError writes err as the dialect's OpenAI-route error response. Errors
// that are not *apiError become 500s.
func (s *Server) writeError(w http.ResponseWriter, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = &apiError{status: http.StatusInternalServerError, errType: "InternalServerError", message: err.Error()}
	}
	writeJSON(w, e.status, s.errorBody(e))
}

// writeNativeError writes err in SGLang's native-route shape.
func writeNativeError(w http.ResponseWriter, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = &apiError{status: http.StatusInternalServerError, message: err.Error()}
	}
	var body sglangNativeErrorBody
	body.Error.Message = e.message
	writeJSON(w, e.status, body)
}

// marshalJSON encodes v like the Python servers do: '<', '>' and '&' stay
// literal (Go would write \u003c), so <think> and <tool_call> read as sent.
// Types with a hand-written encoder (jsonAppender) use it; the output is the
// same as encoding/json's.
func marshalJSON(v any) ([]byte, error) {
	e := jsonEnc{b: make([]byte, 0, 8192)}
	b, err := e.encode(v)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// encode is marshalJSON appending to e's buffer.
func (e *jsonEnc) encode(v any) ([]byte, error) {
	if a, ok := v.(jsonAppender); ok {
		a.appendJSON(e)
		return e.b, e.err
	}
	return marshalReflect(v)
}

// marshalReflect is marshalJSON through encoding/json.
func marshalReflect(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// writeJSON writes v as a JSON response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	e := getEnc()
	defer putEnc(e)
	b, err := e.encode(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"encode response","type":"InternalServerError","param":null,"code":500}}`)
	}
	// With the length announced, as uvicorn announces it for a JSON
	// response, the body goes out as it is rather than chunked.
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
