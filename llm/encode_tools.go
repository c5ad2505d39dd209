package llm

import (
	"bytes"
	"encoding/json"
	"sync/atomic"

	openai "github.com/sashabaranov/go-openai"
)

// toolsCache remembers the JSON of the tool lists a client sends. An
// agent sends the same few lists on every call, and go-openai's
// Tool.MarshalJSON re-encodes each schema through a map and a second
// json.Marshal every time. An entry is used only when every field that
// goes into the encoding equals a private copy taken when it was made, so
// a caller that edits its tool list in place gets the new encoding. It is
// safe for concurrent use.
type toolsCache struct {
	// entries is replaced, never modified: lookups need no lock.
	entries atomic.Pointer[[]*toolsEntry]
}

// maxToolsEntries bounds a client's cache: a client serves one role, and a
// role's agents send one or two tool lists.
const maxToolsEntries = 8

// toolsEntry is one encoded tool list and the copy it was encoded from.
type toolsEntry struct {
	tools []toolCopy
	json  []byte
}

// toolCopy holds what json.Marshal reads from a Tool whose parameters are
// a json.RawMessage (or nil): the only kind the cache takes.
type toolCopy struct {
	typ        openai.ToolType
	function   bool
	name, desc string
	strict     bool
	// raw tells a json.RawMessage (params, nil or not) from a nil
	// interface.
	raw    bool
	params json.RawMessage
}

// functionFields is openai.FunctionDefinition's field list; converting to
// it fails to compile when go-openai adds a field the copy would miss.
type functionFields struct {
	Name        string
	Description string
	Strict      bool
	Parameters  any
}

// copyTool copies t, or reports false when its encoding depends on more
// than the copy holds (tool-level parameters, or function parameters of a
// type other than json.RawMessage).
func copyTool(t *openai.Tool) (toolCopy, bool) {
	c := toolCopy{typ: t.Type, function: t.Function != nil}
	if len(t.Parameters) > 0 {
		return c, false
	}
	if t.Function == nil {
		return c, true
	}
	f := functionFields(*t.Function)
	c.name, c.desc, c.strict = f.Name, f.Description, f.Strict
	switch p := f.Parameters.(type) {
	case json.RawMessage:
		// bytes.Clone keeps nil and empty apart, as RawMessage's
		// MarshalJSON does (null, and an error).
		c.raw, c.params = true, bytes.Clone(p)
	case nil:
	default:
		return c, false
	}
	return c, true
}

// matches reports whether t encodes as the tool c was copied from.
func (c *toolCopy) matches(t *openai.Tool) bool {
	if t.Type != c.typ || (t.Function != nil) != c.function || len(t.Parameters) > 0 {
		return false
	}
	if t.Function == nil {
		return true
	}
	f := t.Function
	if f.Name != c.name || f.Description != c.desc || f.Strict != c.strict {
		return false
	}
	switch p := f.Parameters.(type) {
	case json.RawMessage:
		return c.raw && (p == nil) == (c.params == nil) && bytes.Equal(p, c.params)
	case nil:
		return !c.raw
	}
	return false
}

// encode returns json.Marshal(tools), from the cache when it holds an
// equal list, and false when the list cannot be cached or does not encode.
// An empty list is not cached: the request omits it.
func (tc *toolsCache) encode(tools []openai.Tool) ([]byte, bool) {
	if len(tools) == 0 {
		return nil, false
	}
	var old []*toolsEntry
	p := tc.entries.Load()
	if p != nil {
		old = *p
	}
	for _, e := range old {
		if e.matches(tools) {
			return e.json, true
		}
	}
	e := &toolsEntry{tools: make([]toolCopy, len(tools))}
	for i := range tools {
		var ok bool
		if e.tools[i], ok = copyTool(&tools[i]); !ok {
			return nil, false
		}
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return nil, false
	}
	e.json = b
	// The newest entry first; a lost race with another miss only costs
	// that call's entry.
	next := append([]*toolsEntry{e}, old[:min(len(old), maxToolsEntries-1)]...)
	tc.entries.CompareAndSwap(p, &next)
	return b, true
}

func (e *toolsEntry) matches(tools []openai.Tool) bool {
	if len(tools) != len(e.tools) {
		return false
	}
	for i := range tools {
		if !e.tools[i].matches(&tools[i]) {
			return false
		}
	}
	return true
}
