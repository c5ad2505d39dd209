package gateway

import (
	"sync"

	openai "github.com/sashabaranov/go-openai"
)

// Per-rollout memory of the Responses and Messages APIs.
//
// Both APIs let an agent send back less than the conversation: a Responses
// client names an earlier response (previous_response_id) or item
// (item_reference), and an Anthropic client gives a tool call's arguments
// as a parsed object, whose text the engine wrote in its own way. The
// gateway keeps what it answered for the rollout's lifetime, so each call
// still translates into the whole conversation the engine saw; the memory
// is forgotten when the rollout ends (Run).

// maxRememberedItems bounds one rollout's remembered items and responses:
// a rollout is bounded by the run's turn budgets, this by a farm's memory.
const maxRememberedItems = 1 << 16

// apiMemory holds every open rollout's memory, by rollout id.
type apiMemory struct {
	mu sync.Mutex
	by map[string]*rolloutMemory
}

// rolloutMemory is what one rollout's Responses and Messages calls left.
type rolloutMemory struct {
	// responses are the stored responses by id.
	responses map[string]*storedResponse
	// items are the input and output items of stored responses, by id.
	items map[string]responseItem
	// toolArgs is the engine's argument text of each tool call the
	// gateway answered in the Messages API, by tool_use id.
	toolArgs map[string]string
}

// storedResponse is one answered Responses call the agent may continue or
// read back.
type storedResponse struct {
	role string
	// conv is the conversation after the call: its input (instructions
	// left out, as previous_response_id does not carry them) and its
	// answer.
	conv []openai.ChatCompletionMessage
	// body is the response object as it was answered.
	body responseObject
}

// with runs f on rollout id's memory, creating it.
func (m *apiMemory) with(id string, f func(*rolloutMemory)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.by == nil {
		m.by = map[string]*rolloutMemory{}
	}
	r := m.by[id]
	if r == nil {
		r = &rolloutMemory{responses: map[string]*storedResponse{}, items: map[string]responseItem{}, toolArgs: map[string]string{}}
		m.by[id] = r
	}
	f(r)
}

// forget drops rollout id's memory.
func (m *apiMemory) forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.by, id)
}

// full reports whether r holds as many entries as it may.
func (r *rolloutMemory) full() bool {
	return len(r.responses)+len(r.items)+len(r.toolArgs) >= maxRememberedItems
}
