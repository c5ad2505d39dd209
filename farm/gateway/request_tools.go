package gateway

import (
	"bytes"
	"encoding/json"
	"sync"

	openai "github.com/sashabaranov/go-openai"
)

// An agent sends the same tool list on every call. Decoded by
// encoding/json, each function's parameters are a map, which the client
// re-encodes on every call (go-openai's Tool.MarshalJSON goes through a map
// and a second json.Marshal), while the built-in agents' parameters are
// json.RawMessage, which the client's tools cache takes. The gateway
// therefore turns the parameters into the JSON json.Marshal writes of the
// map — the same bytes the map encodes to, so the engine sees the same
// request — and remembers each list by the agent's JSON of it.

// toolLists remembers the agents' tool lists, canonical (see
// canonicalTools), by the JSON they came as. It is safe for concurrent use;
// the lists it returns are shared and must not be modified.
type toolLists struct {
	mu    sync.Mutex
	lists map[string][]openai.Tool
}

// maxToolLists bounds the lists remembered: a run's agents send a few (one
// or two a role); beyond the bound the memory starts again.
const maxToolLists = 32

// lookup returns the list remembered for the JSON raw.
func (l *toolLists) lookup(raw []byte) ([]openai.Tool, bool) {
	if l == nil {
		return nil, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.lists[string(raw)]
	return t, ok
}

// store remembers tools, canonical, as the list of the JSON raw.
func (l *toolLists) store(raw []byte, tools []openai.Tool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lists == nil || len(l.lists) >= maxToolLists {
		l.lists = make(map[string][]openai.Tool)
	}
	l.lists[string(bytes.Clone(raw))] = tools
}

// canonicalTools returns tools with each function's parameters replaced by
// json.Marshal's JSON of them as a json.RawMessage, which json.Marshal
// writes back unchanged (compact, HTML-escaped as the map was): the list
// encodes to the same bytes. A list with tool-level parameters, or one that
// does not encode, is returned as it is.
func canonicalTools(tools []openai.Tool) []openai.Tool {
	out := make([]openai.Tool, len(tools))
	for i, t := range tools {
		if len(t.Parameters) > 0 {
			return tools
		}
		out[i] = t
		if t.Function == nil || t.Function.Parameters == nil {
			continue
		}
		if _, ok := t.Function.Parameters.(json.RawMessage); ok {
			continue
		}
		b, err := json.Marshal(t.Function.Parameters)
		if err != nil {
			return tools
		}
		f := *t.Function
		f.Parameters = json.RawMessage(b)
		out[i].Function = &f
	}
	return out
}
