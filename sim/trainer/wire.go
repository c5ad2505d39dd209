package trainer

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// The request bodies, as the Tinker SDK's types (src/tinker/types/) and
// SkyRL's server have them. Fields the sim has no use for (tags,
// user_metadata, sdk_version, type, LoRA's train_* switches) are accepted
// and ignored.

type createSessionRequest struct {
	Tags       []string `json:"tags"`
	SDKVersion string   `json:"sdk_version"`
}

type heartbeatRequest struct {
	SessionID string `json:"session_id"`
}

type loraConfig struct {
	Rank int    `json:"rank"`
	Seed *int64 `json:"seed"`
}

type createModelRequest struct {
	SessionID  string      `json:"session_id"`
	ModelSeqID *int64      `json:"model_seq_id"`
	BaseModel  string      `json:"base_model"`
	LoraConfig *loraConfig `json:"lora_config"`
}

type modelRequest struct {
	ModelID string `json:"model_id"`
}

type tensorData struct {
	Data  []float64 `json:"data"`
	Dtype string    `json:"dtype"`
	Shape []int     `json:"shape"`
}

type chunk struct {
	Type   string  `json:"type"`
	Tokens []int64 `json:"tokens"`
}

type wireDatum struct {
	ModelInput struct {
		Chunks []chunk `json:"chunks"`
	} `json:"model_input"`
	LossFnInputs map[string]*tensorData `json:"loss_fn_inputs"`
}

type lossInput struct {
	Data         []wireDatum        `json:"data"`
	LossFn       string             `json:"loss_fn"`
	LossFnConfig map[string]float64 `json:"loss_fn_config"`
}

type forwardBackwardRequest struct {
	ForwardBackwardInput *lossInput `json:"forward_backward_input"`
	ModelID              string     `json:"model_id"`
	SeqID                *int64     `json:"seq_id"`
}

type forwardRequest struct {
	ForwardInput *lossInput `json:"forward_input"`
	ModelID      string     `json:"model_id"`
	SeqID        *int64     `json:"seq_id"`
}

type adamParams struct {
	LearningRate *float64 `json:"learning_rate"`
	Beta1        *float64 `json:"beta1"`
	Beta2        *float64 `json:"beta2"`
	Eps          *float64 `json:"eps"`
	WeightDecay  *float64 `json:"weight_decay"`
	GradClipNorm *float64 `json:"grad_clip_norm"`
}

type optimStepRequest struct {
	AdamParams *adamParams `json:"adam_params"`
	ModelID    string      `json:"model_id"`
	SeqID      *int64      `json:"seq_id"`
}

type saveWeightsRequest struct {
	ModelID string `json:"model_id"`
	Path    string `json:"path"`
	SeqID   *int64 `json:"seq_id"`
}

// loadWeightsRequest is the SDK's LoadWeightsRequest: optimizer also
// restores the Adam state saved with the weights (load_state_with_optimizer).
type loadWeightsRequest struct {
	ModelID   string `json:"model_id"`
	Path      string `json:"path"`
	Optimizer bool   `json:"optimizer"`
	SeqID     *int64 `json:"seq_id"`
}

type weightsInfoRequest struct {
	TinkerPath string `json:"tinker_path"`
}

type retrieveRequest struct {
	RequestID json.RawMessage `json:"request_id"`
}

// requestID reads a request_id given as a JSON string or number.
func (r retrieveRequest) requestID() (string, error) {
	var s string
	if err := json.Unmarshal(r.RequestID, &s); err == nil {
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(r.RequestID, &n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("request_id: want a string, got %s", clip(string(r.RequestID)))
}

// futureAnswer is the SDK's UntypedAPIFuture.
type futureAnswer struct {
	RequestID string `json:"request_id"`
	ModelID   string `json:"model_id,omitempty"`
}

// tensorOut is a TensorData the server writes.
type tensorOut struct {
	Data  []float64 `json:"data"`
	Dtype string    `json:"dtype"`
	Shape []int     `json:"shape"`
}

func float32Tensor(v []float64) tensorOut {
	return tensorOut{Data: v, Dtype: "float32", Shape: []int{len(v)}}
}

// forwardBackwardOutput is the SDK's ForwardBackwardOutput.
type forwardBackwardOutput struct {
	LossFnOutputType string                 `json:"loss_fn_output_type"`
	LossFnOutputs    []map[string]tensorOut `json:"loss_fn_outputs"`
	Metrics          map[string]float64     `json:"metrics"`
}

// httpError is an answer other than 200, with FastAPI's {"detail": …}.
type httpError struct {
	status int
	detail string
	// retryAfter, when set, is sent as Retry-After (whole seconds).
	retryAfter int
	// noRetry sends X-Should-Retry: false, which the SDK's HTTP layer
	// obeys (it retries a 409 otherwise).
	noRetry bool
}

func (e *httpError) Error() string { return strconv.Itoa(e.status) + ": " + e.detail }

func errorf(status int, format string, args ...any) *httpError {
	return &httpError{status: status, detail: fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"detail":"encode answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, e *httpError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	if e.noRetry {
		w.Header().Set("X-Should-Retry", "false")
	}
	writeJSON(w, e.status, map[string]string{"detail": e.detail})
}

// decode reads a JSON body into v; errors are 400s naming what is wrong.
func decode(route string, body []byte, v any) *httpError {
	if len(bytes.TrimSpace(body)) == 0 {
		return errorf(http.StatusBadRequest, "%s: empty body, want a JSON object", route)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errorf(http.StatusBadRequest, "%s: invalid JSON body: %v", route, err)
	}
	return nil
}

// fingerprint identifies a request by route and content: the body decoded
// and encoded again (object keys sorted), hashed. Two bodies with the same
// fields and values in another order or spacing match.
func fingerprint(route string, body []byte) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	canon := body
	if d.Decode(&v) == nil {
		if b, err := json.Marshal(v); err == nil {
			canon = b
		}
	}
	h := sha256.New()
	h.Write([]byte(route))
	h.Write([]byte{0})
	h.Write(canon)
	return string(h.Sum(nil))
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
