package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
)

// session is one rollout as the gateway sees it: the calls under its base
// URLs, grouped into trajectories per role, and how the agent ended it.
// Its methods are safe for concurrent use.
type session struct {
	// ctx ends with the rollout (its deadline, the run's cancellation):
	// calls in flight are cut then.
	ctx      context.Context
	offer    offer
	id       string
	question string
	seed     int64
	started  time.Time

	mu sync.Mutex
	// finished is set once the rollout's tree was taken: later calls are
	// refused with 409.
	finished bool
	// trajectories per role, in the order their first call came.
	roles map[string][]*trajectory
	// named holds the trajectories an X-Mgrpo-Trajectory header named, by
	// role and name.
	named map[string]*trajectory
	// overrides counts calls whose sampling settings the run's replaced.
	overrides int
	// callIDs are the tool call ids returned to the agent so far: each
	// answer's ids are made unique within the rollout (see uniqueCallIDs).
	callIDs map[string]bool
	// lease is when a pulled rollout's lease runs out (zero: pushed or not
	// yet taken); every call under the rollout's URLs renews it.
	lease time.Time
	// leaseFor is how long a call renews the lease by.
	leaseFor time.Duration

	// result receives the agent's outcome once (push answer, pull result).
	result chan outcome
	once   sync.Once
}

// outcome is how the agent service ended a rollout.
type outcome struct {
	res taskResult
	// err is the failure of the agent service (it answered with an error,
	// an unreadable body, or not at all).
	err error
}

// trajectory is one conversation of a role: each call's request messages
// extend the previous call's messages and the answer it got.
type trajectory struct {
	role string
	name string // the X-Mgrpo-Trajectory header, when one named it
	// delegation is the planner's tool call that started an executor
	// trajectory (the first X-Mgrpo-Delegation header of its calls).
	delegation string
	// msgs is the conversation so far: the last request's messages and the
	// answer it got (as the gateway returned it).
	msgs []openai.ChatCompletionMessage
	// raw is what the next call of a completions trajectory extends (nil
	// for a trajectory of chat calls only; see raw.go).
	raw *rawState
	// busy is set while a call of the trajectory is in flight; a busy
	// trajectory is never continued by another call.
	busy   bool
	turns  []*llm.Turn
	steps  [][]openai.ToolCall
	obs    map[string]string // tool_call_id → observation seen in later requests
	errMsg string
	// errTurn is the turn errMsg names.
	errTurn int
	// errFault says whose fault errMsg is (see fault.go).
	errFault fault
	prefix   llm.PromptPrefix
	// tokens is the trajectory's token state: the sequence the engine
	// sampled so far, which the next call continues (llm.Request.Tokens).
	tokens llm.TokenState
	start  time.Time
	last   time.Time
	// edit is the history edit the call in flight makes (set by pick,
	// taken by release): the call's turn starts a new sequence.
	edit *historyEdit
	// cut is set by the call in flight whose continuation in tokens did
	// not fit the context (taken by release): its turn starts a new
	// sequence, rendered from the conversation.
	cut bool
	// splits are the turns that started a new sequence because the agent
	// rewrote its history or the context forced it.
	splits []agents.Split
	// foreign says why a trajectory of the main role is not the rollout's
	// (foreign.go); empty for the rollout's own.
	foreign string
}

func newSession(id, question string, seed int64) *session {
	return &session{id: id, question: question, seed: seed, started: time.Now(),
		roles: map[string][]*trajectory{}, named: map[string]*trajectory{}, callIDs: map[string]bool{}, result: make(chan outcome, 1)}
}

// finish delivers the agent's outcome; only the first counts.
func (s *session) finish(o outcome) bool {
	ok := false
	s.once.Do(func() {
		s.result <- o
		ok = true
	})
	return ok
}

// errFinished is returned for calls of a rollout whose tree was taken.
var errFinished = fmt.Errorf("the rollout has finished")

// acquire picks the trajectory a call with msgs continues (by header name,
// else by message-prefix extension, else an idle trajectory whose history
// the agent rewrote), or starts a new one, and marks it busy. The caller
// must call release.
func (s *session) acquire(role, name, delegation string, msgs []openai.ChatCompletionMessage) (*trajectory, error) {
	t, err := s.acquireBy(role, name, delegation, func() *trajectory { return s.pick(role, msgs) })
	if err == nil && name != "" {
		// A named trajectory is the header's whatever its messages: a
		// request that does not extend its conversation rewrote it.
		s.mu.Lock()
		t.edit = nil
		if len(t.msgs) > 0 && !prefixOf(t.msgs, msgs) {
			at := 0
			for at < len(t.msgs) && at < len(msgs) && sameMessage(t.msgs[at], msgs[at]) {
				at++
			}
			t.edit = &historyEdit{at: at, why: describeEdit(t.msgs, msgs, at)}
		}
		s.mu.Unlock()
	}
	if err == nil {
		s.mu.Lock()
		s.classifyForeign(t, msgs)
		s.mu.Unlock()
	}
	return t, err
}

// acquireBy is acquire with pick choosing among the role's unnamed
// trajectories (s.mu held; a new one when none fits): the named trajectory
// when name is set, else pick's, marked busy.
func (s *session) acquireBy(role, name, delegation string, pick func() *trajectory) (*trajectory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return nil, errFinished
	}
	if !s.lease.IsZero() {
		s.lease = time.Now().Add(s.leaseFor)
	}
	var t *trajectory
	if name != "" {
		key := role + "\x00" + name
		t = s.named[key]
		if t == nil {
			t = s.add(role, name)
			s.named[key] = t
		}
		if t.busy {
			return nil, fmt.Errorf("trajectory %q has a call in flight; a trajectory takes one call at a time", name)
		}
	} else {
		t = pick()
	}
	t.busy = true
	if t.delegation == "" && role == RoleExecutor {
		// Only the first delegation a trajectory names counts: the call
		// that started it.
		t.delegation = delegation
	}
	return t, nil
}

// pick is acquire's choice among the role's unnamed chat trajectories
// (s.mu held): the idle trajectory whose conversation (its last request and
// the answer the gateway returned) msgs extends, the longest when several
// do; else the idle trajectory of the same task whose history msgs rewrites
// (see editOf), the one msgs shares the most messages with, its call then
// recorded as a history edit; else a new trajectory.
func (s *session) pick(role string, msgs []openai.ChatCompletionMessage) *trajectory {
	var best, rewritten *trajectory
	var edit historyEdit
	for _, t := range s.roles[role] {
		if t.busy || t.name != "" || len(t.msgs) == 0 {
			continue
		}
		if prefixOf(t.msgs, msgs) {
			if best == nil || len(t.msgs) > len(best.msgs) {
				best = t
			}
			continue
		}
		if e, ok := editOf(role, t.msgs, msgs); ok && (rewritten == nil || e.at > edit.at) {
			rewritten, edit = t, e
		}
	}
	switch {
	case best != nil:
		best.edit = nil
	case rewritten != nil:
		best = rewritten
		best.edit = &edit
	default:
		best = s.add(role, "")
	}
	return best
}

// add starts a trajectory of role (s.mu held).
func (s *session) add(role, name string) *trajectory {
	t := &trajectory{role: role, name: name, obs: map[string]string{}, start: time.Now()}
	s.roles[role] = append(s.roles[role], t)
	return t
}

// release records a call's result on t: the request messages, and the turn
// with the answer returned to the agent (turn nil when the call failed
// without a partial turn; callErr the failure, if any).
func (s *session) release(t *trajectory, msgs []openai.ChatCompletionMessage, turn *llm.Turn, answer *openai.ChatCompletionMessage, callErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		// The tree was taken: a call that ends after it is not kept.
		return
	}
	t.busy = false
	t.last = time.Now()
	for _, m := range msgs {
		if m.Role == openai.ChatMessageRoleTool && m.ToolCallID != "" {
			t.obs[m.ToolCallID] = m.Content
		}
	}
	if answer != nil {
		s.uniqueCallIDs(answer)
	}
	if turn != nil {
		switch {
		case t.edit != nil && len(t.turns) > 0:
			t.splits = append(t.splits, agents.Split{Turn: len(t.turns), Reason: rollout.SplitHistoryEdit, Message: t.edit.at, Detail: t.edit.why})
		case t.cut:
			t.splits = append(t.splits, agents.Split{Turn: len(t.turns), Reason: rollout.SplitContextCut, Message: len(msgs),
				Detail: "the sequence in tokens outgrew the context: the conversation was rendered again by the chat template"})
		}
		t.edit, t.cut = nil, false
		t.turns = append(t.turns, turn)
		var calls []openai.ToolCall
		if answer != nil {
			calls = answer.ToolCalls
		}
		t.steps = append(t.steps, calls)
	}
	if callErr != nil && t.errMsg == "" {
		t.errMsg, t.errTurn, t.errFault = fmt.Sprintf("turn %d: %v", len(t.turns), callErr), len(t.turns), faultOf(callErr)
	}
	if answer != nil {
		t.msgs = append(append(t.msgs[:0:0], msgs...), *answer)
	} else if len(t.msgs) == 0 {
		t.msgs = append(t.msgs[:0:0], msgs...)
	}
}

// uniqueCallIDs gives each tool call of answer an id no earlier answer of
// the rollout returned (s.mu held). The client derives a call's id from the
// generated text, so a model that repeats a call word for word (a retried
// delegation) gets the id of the earlier one; agent frameworks key tool
// results by call id, and the OpenAI Agents SDK skips a call whose id it
// has already run as a replay and asks the model again without it, which
// broke the trajectory into two conversations. The ids never reach the
// model (Hermes tool calls carry none), so renaming them changes no token.
func (s *session) uniqueCallIDs(answer *openai.ChatCompletionMessage) {
	for i := range answer.ToolCalls {
		id := answer.ToolCalls[i].ID
		for n := 2; s.callIDs[id]; n++ {
			id = fmt.Sprintf("%s_r%d", answer.ToolCalls[i].ID, n)
		}
		answer.ToolCalls[i].ID = id
		s.callIDs[id] = true
	}
}

// take marks the session finished and returns its trajectories per role;
// calls in flight are refused from now on, and their turns are not kept.
func (s *session) take() map[string][]*trajectory {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finished = true
	return s.roles
}

// prefixOf reports whether prefix equals the first len(prefix) messages of
// msgs, as far as a conversation's meaning goes (see sameMessage).
func prefixOf(prefix, msgs []openai.ChatCompletionMessage) bool {
	if len(prefix) > len(msgs) {
		return false
	}
	for i := range prefix {
		if !sameMessage(prefix[i], msgs[i]) {
			return false
		}
	}
	return true
}

// sameMessage compares two messages by meaning, the way agent frameworks
// echo a conversation back: by role, text (surrounding whitespace aside, so
// null, "", a missing content and whitespace-only content are alike: SDKs
// trim, LangChain sends "" for null) and tool calls (name and arguments
// compared as JSON values, so re-serialized arguments match; ids when both
// have them; a tool result's call id likewise). Reasoning is left out: many
// SDKs drop it from the history they send back, and the gateway's token
// state holds the reasoning the model sampled whatever the agent echoes.
func sameMessage(a, b openai.ChatCompletionMessage) bool {
	if a.Role != b.Role || strings.TrimSpace(a.Content) != strings.TrimSpace(b.Content) {
		return false
	}
	if a.ToolCallID != b.ToolCallID && a.ToolCallID != "" && b.ToolCallID != "" {
		return false
	}
	if len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		x, y := a.ToolCalls[i], b.ToolCalls[i]
		if x.Function.Name != y.Function.Name || !sameJSON(x.Function.Arguments, y.Function.Arguments) {
			return false
		}
		if x.ID != "" && y.ID != "" && x.ID != y.ID {
			return false
		}
	}
	return true
}

// sameJSON compares two JSON texts by value, falling back to the text when
// either does not parse.
func sameJSON(a, b string) bool {
	if a == b {
		return true
	}
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return strings.TrimSpace(a) == strings.TrimSpace(b)
	}
	return reflect.DeepEqual(x, y)
}

// leaseExpired reports whether a pulled rollout's lease ran out.
func (s *session) leaseExpired() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.lease.IsZero() && time.Now().After(s.lease)
}

// renew extends a pulled rollout's lease; it reports false once the
// rollout has finished.
func (s *session) renew() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return false
	}
	s.lease = time.Now().Add(s.leaseFor)
	return true
}
