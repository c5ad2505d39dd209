package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/mgrpo/mgrpo/tools"
)

// CallError is a call of `mgrpo tool mcp call` the user got wrong: a tool
// the server does not offer, arguments that are not JSON. Its text is the
// message alone; the caller tells it apart from a tool's failure.
type CallError struct{ Err error }

func (e *CallError) Error() string { return e.Err.Error() }
func (e *CallError) Unwrap() error { return e.Err }

// List prints every tool of set as the model would see it: its offered
// name, its server and name there, its roles (roles[server]) and call
// policy, the description and the parameters' JSON schema.
func List(set *Set, roles map[string]string, w io.Writer) error {
	var b strings.Builder
	for _, t := range set.MCPTools() {
		spec := t.Spec()
		timeout, conc, cache := t.Policy()
		cacheText := "off"
		if cache {
			cacheText = "on"
		}
		fmt.Fprintf(&b, "%s\n  server %s, tool %s; roles %s; timeout %v, concurrency %d, cache %s\n", spec.Name, t.Server(), t.Remote(), roles[t.Server()], timeout, conc, cacheText)
		for _, l := range strings.Split(strings.TrimSpace(spec.Description), "\n") {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		fmt.Fprintf(&b, "  parameters: %s\n", compactJSON(spec.Parameters))
	}
	if changed := set.Changed(); len(changed) > 0 {
		fmt.Fprintf(&b, "(servers that announced a tool-list change while listed: %s)\n", strings.Join(changed, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Call calls the tool of set's server named server (by the server's name
// for it, or the offered name) with args, a JSON object ("" is {}),
// through a registry as an agent would (the arguments validated against
// the listed schema first), printing the observation. An error
// observation returns tools.ErrToolFailed; an unknown tool or arguments
// that are not JSON a *CallError.
func Call(ctx context.Context, set *Set, server, tool, args string, w io.Writer) error {
	var found *Tool
	for _, t := range set.MCPTools() {
		if t.Remote() == tool || t.Spec().Name == tool {
			found = t
		}
	}
	if found == nil {
		var have []string
		for _, t := range set.MCPTools() {
			have = append(have, t.Remote())
		}
		return &CallError{fmt.Errorf("tool %q: server %s offers %s", tool, server, strings.Join(have, ", "))}
	}
	if args == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) {
		return &CallError{fmt.Errorf("--args %q: not JSON (want one object, e.g. {\"a\": 1})", args)}
	}
	reg, err := tools.NewRegistry([]tools.Tool{found})
	if err != nil {
		return &CallError{err}
	}
	obs := reg.Call(ctx, found.Spec().Name, json.RawMessage(args))
	text := obs.Text
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if _, err := io.WriteString(w, text); err != nil {
		return fmt.Errorf("write observation: %w", err)
	}
	if obs.Meta.Class != "" {
		return fmt.Errorf("%w (%s)", tools.ErrToolFailed, obs.Meta.Class)
	}
	return nil
}

func compactJSON(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}
