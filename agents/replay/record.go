// Package replay records what the agents' models answered and their tools
// observed, keyed by the request that produced it, and plays it back: a
// recorded run's agents rerun with no engine and no web, the same
// requests getting the same answers, the first request the recording does
// not hold reported with its difference from the recorded one.
//
// A model call is keyed by the client's role, the trajectory's routing key
// (the rollout's run, step, query and k, and the agent's place in the
// rollout) and the request's canonical bytes (its messages, tools and
// sampling, whose seed the agents derive from the rollout's seed and the
// turn). A tool call is keyed by its name and arguments: tools answer the
// same arguments alike within a run (the tool cache makes them so). The
// recording lives in a key-value store (the run's store's cache serves).
package replay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/tools"
)

// KV is where a recording is kept; the run's store (store.Cache) is one.
type KV interface {
	// Get returns the value under key and true, or false when absent.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// Set stores value under key for ttl, replacing any earlier value.
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// TTL keeps a recording as long as its run.
const TTL = 100 * 365 * 24 * time.Hour

// The key prefixes of a recording.
const (
	prefixResponse = "replay/response/"
	prefixRequest  = "replay/request/"
	prefixTool     = "replay/tool/"
	// keyMarker says that a store holds a recording.
	keyMarker = "replay/recorded"
)

// canonicalRequest is what of a request its answer depends on.
type canonicalRequest struct {
	Messages []openai.ChatCompletionMessage `json:"messages"`
	Tools    []openai.Tool                  `json:"tools,omitempty"`
	Sampling *llm.Sampling                  `json:"sampling,omitempty"`
}

// requestBytes returns req's canonical bytes.
func requestBytes(req llm.Request) ([]byte, error) {
	b, err := json.Marshal(canonicalRequest{Messages: req.Messages, Tools: req.Tools, Sampling: req.Sampling})
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	return b, nil
}

// turnOf is a request's turn within its trajectory: the assistant
// messages it already holds.
func turnOf(req llm.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleAssistant {
			n++
		}
	}
	return n
}

func hashKey(prefix string, parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{0})
		h.Write(p)
	}
	return prefix + hex.EncodeToString(h.Sum(nil))
}

func responseKey(role string, req llm.Request, body []byte) string {
	return hashKey(prefixResponse, []byte(role), []byte(req.TrajectoryKey), body)
}

func requestKey(role, trajectory string, turn int) string {
	return prefixRequest + role + "/" + trajectory + "/" + strconv.Itoa(turn)
}

func toolKey(name string, args json.RawMessage) string {
	var c bytes.Buffer
	if json.Compact(&c, args) != nil {
		c.Reset()
		c.Write(args)
	}
	return hashKey(prefixTool, []byte(name), c.Bytes())
}

// response is a recorded model answer: the turn, and the call's error
// when it failed (the turn then is a partial one, or nil).
type response struct {
	Turn  *llm.Turn `json:"turn,omitempty"`
	Error string    `json:"error,omitempty"`
}

// Stats count what a Recorder kept.
type Stats struct {
	// Calls and ToolCalls count the model and tool calls recorded, Bytes
	// the bytes written, Seconds the time spent encoding and storing.
	Calls, ToolCalls, Bytes int64
	Seconds                 float64
	// Errors counts entries the store refused (the run goes on).
	Errors int64
}

// Recorder keeps every answer of the models and tools it wraps. It never
// changes what they return: a store that refuses an entry is logged and
// counted.
type Recorder struct {
	kv                             KV
	log                            *slog.Logger
	calls, tools, bytes, ns, fails atomic.Int64
	marked                         atomic.Bool
}

// NewRecorder returns a recorder writing into kv (log: nil discards).
func NewRecorder(kv KV, log *slog.Logger) *Recorder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Recorder{kv: kv, log: log}
}

// Stats returns what r recorded so far.
func (r *Recorder) Stats() Stats {
	return Stats{Calls: r.calls.Load(), ToolCalls: r.tools.Load(), Bytes: r.bytes.Load(),
		Seconds: time.Duration(r.ns.Load()).Seconds(), Errors: r.fails.Load()}
}

func (r *Recorder) put(ctx context.Context, key string, value []byte) {
	// A cancelled run still records what it was answered.
	ctx = context.WithoutCancel(ctx)
	if !r.marked.Load() {
		if err := r.kv.Set(ctx, keyMarker, []byte("1"), TTL); err == nil {
			r.marked.Store(true)
		}
	}
	if err := r.kv.Set(ctx, key, value, TTL); err != nil {
		r.fails.Add(1)
		r.log.Warn("recording: the store refused an entry; replay will miss it", "error", err)
		return
	}
	r.bytes.Add(int64(len(key) + len(value)))
}

// Model returns m recording every call into r under role. When m also
// makes raw completions (a Completer, as *llm.Client is), so does the
// model returned, recording them too.
func (r *Recorder) Model(role string, m agents.Model) agents.Model {
	rm := recordingModel{r: r, role: role, m: m}
	if c, ok := m.(Completer); ok {
		return recordingCompleter{recordingModel: rm, c: c}
	}
	return rm
}

// Completer is a model that also makes raw completions (the gateway's
// /v1/completions route).
type Completer interface {
	Complete(ctx context.Context, req llm.CompletionRequest) (*llm.Turn, error)
}

// recordingCompleter records raw completions as recordingModel records
// chat calls. Their answers are kept for the record only: runs of the
// gateway's agents are rescored, not replayed (their code is not ours to
// rerun), so no request-by-turn entry is written.
type recordingCompleter struct {
	recordingModel
	c Completer
}

// canonicalCompletion is what of a raw completion its answer depends on.
type canonicalCompletion struct {
	Prompt    string        `json:"prompt,omitempty"`
	PromptIDs []int32       `json:"prompt_ids,omitempty"`
	Sampling  *llm.Sampling `json:"sampling,omitempty"`
}

func (rc recordingCompleter) Complete(ctx context.Context, req llm.CompletionRequest) (*llm.Turn, error) {
	t, err := rc.c.Complete(ctx, req)
	start := time.Now()
	defer func() { rc.r.ns.Add(int64(time.Since(start))) }()
	body, berr := json.Marshal(canonicalCompletion{Prompt: req.Prompt, PromptIDs: req.PromptIDs, Sampling: req.Sampling})
	resp := response{Turn: t}
	if err != nil {
		resp.Error = err.Error()
	}
	value, verr := json.Marshal(resp)
	if berr != nil || verr != nil {
		rc.r.fails.Add(1)
		rc.r.log.Warn("recording: completion not recorded", "error", errors.Join(berr, verr))
		return t, err
	}
	rc.r.put(ctx, hashKey(prefixCompletion, []byte(rc.role), []byte(req.TrajectoryKey), body), value)
	rc.r.calls.Add(1)
	return t, err
}

// prefixCompletion is the key prefix of recorded raw completions.
const prefixCompletion = "replay/completion/"

type recordingModel struct {
	r    *Recorder
	role string
	m    agents.Model
}

func (rm recordingModel) Chat(ctx context.Context, req llm.Request) (*llm.Turn, error) {
	t, err := rm.m.Chat(ctx, req)
	start := time.Now()
	defer func() { rm.r.ns.Add(int64(time.Since(start))) }()
	body, berr := requestBytes(req)
	if berr != nil {
		rm.r.fails.Add(1)
		rm.r.log.Warn("recording: request not recorded", "error", berr)
		return t, err
	}
	resp := response{Turn: t}
	if err != nil {
		resp.Error = err.Error()
	}
	value, verr := json.Marshal(resp)
	if verr != nil {
		rm.r.fails.Add(1)
		rm.r.log.Warn("recording: answer not recorded", "error", verr)
		return t, err
	}
	rm.r.put(ctx, responseKey(rm.role, req, body), value)
	rm.r.put(ctx, requestKey(rm.role, req.TrajectoryKey, turnOf(req)), body)
	rm.r.calls.Add(1)
	return t, err
}

// Toolbox returns tb recording every tool observation into r.
func (r *Recorder) Toolbox(tb agents.Toolbox) agents.Toolbox {
	return recordingToolbox{r: r, tb: tb}
}

type recordingToolbox struct {
	r  *Recorder
	tb agents.Toolbox
}

func (rt recordingToolbox) Specs() []tools.Spec { return rt.tb.Specs() }

func (rt recordingToolbox) Call(ctx context.Context, name string, args json.RawMessage) tools.Observation {
	obs := rt.tb.Call(ctx, name, args)
	start := time.Now()
	defer func() { rt.r.ns.Add(int64(time.Since(start))) }()
	value, err := json.Marshal(obs)
	if err != nil {
		rt.r.fails.Add(1)
		return obs
	}
	rt.r.put(ctx, toolKey(name, args), value)
	rt.r.tools.Add(1)
	return obs
}

// textKey is the key of a recorded text answer of kind (a judge's).
func textKey(kind string, parts []string) string {
	bs := [][]byte{[]byte(kind)}
	for _, p := range parts {
		bs = append(bs, []byte(p))
	}
	return hashKey(prefixText, bs...)
}

// prefixText is the key prefix of text answers.
const prefixText = "replay/text/"

// Text records the answer call gives to the request named by kind and
// parts (a judge's model and prompt), as it returns it.
func (r *Recorder) Text(ctx context.Context, kind string, parts []string, call func() (string, error)) (string, error) {
	return r.TextAt(ctx, kind, "", parts, call)
}

// TextAt is Text for a request made on behalf of at (an eval's pair
// key; "" for none): the request is kept under at too, so that a replay
// missing it can show what changed.
func (r *Recorder) TextAt(ctx context.Context, kind, at string, parts []string, call func() (string, error)) (string, error) {
	out, err := call()
	if err == nil {
		r.put(ctx, textKey(kind, parts), []byte(out))
		if at != "" {
			if body, jerr := json.Marshal(parts); jerr == nil {
				r.put(ctx, requestKey(kind, at, 0), body)
			}
		}
	}
	return out, err
}

// LogCost logs what the recording cost a run of rollouts: entries, bytes
// per rollout and the time spent per recorded call.
func (r *Recorder) LogCost(rollouts int) {
	st := r.Stats()
	perRollout, perCall := 0.0, 0.0
	if rollouts > 0 {
		perRollout = float64(st.Bytes) / float64(rollouts)
	}
	if n := st.Calls + st.ToolCalls; n > 0 {
		perCall = st.Seconds / float64(n) * 1e6
	}
	r.log.Info("recording", "model_calls", st.Calls, "tool_calls", st.ToolCalls, "bytes", st.Bytes,
		"bytes_per_rollout", perRollout, "us_per_call", perCall, "refused", st.Errors)
}
