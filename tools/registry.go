package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/mgrpo/mgrpo/internal/failure"
)

// Registry holds the tools of an agent, validates every call's arguments
// against the tool's schema and turns every failure, a panic included, into
// an observation. It is immutable after NewRegistry and safe for
// concurrent use.
type Registry struct {
	tools   map[string]entry
	names   []string
	metrics *Metrics
	log     *slog.Logger
	opts    []RegistryOption
}

type entry struct {
	tool   Tool
	schema *jsonschema.Schema
}

// RegistryOption configures NewRegistry.
type RegistryOption func(*Registry)

// WithMetrics records every call in m.
func WithMetrics(m *Metrics) RegistryOption { return func(r *Registry) { r.metrics = m } }

// WithLogger logs recovered panics to l.
func WithLogger(l *slog.Logger) RegistryOption { return func(r *Registry) { r.log = l } }

// NewRegistry compiles each tool's parameter schema. Two tools with one
// name, or a schema that does not compile, are configuration errors.
func NewRegistry(tools []Tool, opts ...RegistryOption) (*Registry, error) {
	r := &Registry{tools: map[string]entry{}, log: slog.Default(), opts: opts}
	for _, o := range opts {
		o(r)
	}
	for _, t := range tools {
		s := t.Spec()
		if s.Name == "" {
			return nil, errors.New("register tool: empty name")
		}
		if _, dup := r.tools[s.Name]; dup {
			return nil, fmt.Errorf("register tool %s: duplicate name", s.Name)
		}
		sch, err := compileSchema(s.Name, s.Parameters)
		if err != nil {
			return nil, fmt.Errorf("register tool %s: %w", s.Name, err)
		}
		r.tools[s.Name] = entry{tool: t, schema: sch}
		r.names = append(r.names, s.Name)
	}
	sort.Strings(r.names)
	return r, nil
}

func compileSchema(name string, params json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	loc := "mem://tools/" + name + ".json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return sch, nil
}

// Tools returns the registered tools, sorted by name.
func (r *Registry) Tools() []Tool {
	out := make([]Tool, len(r.names))
	for i, n := range r.names {
		out[i] = r.tools[n].tool
	}
	return out
}

// Rebuild returns a new registry of tools with r's options (metrics,
// logger): r's tool set changed (an MCP server's list did), r itself stays
// as it is for whoever still uses it.
func (r *Registry) Rebuild(tools []Tool) (*Registry, error) {
	return NewRegistry(tools, r.opts...)
}

// Names returns the registered tool names, sorted.
func (r *Registry) Names() []string { return append([]string(nil), r.names...) }

// Specs returns the specs of the registered tools, sorted by name.
func (r *Registry) Specs() []Spec {
	out := make([]Spec, len(r.names))
	for i, n := range r.names {
		out[i] = r.tools[n].tool.Spec()
	}
	return out
}

// Call runs tool name with args (a JSON object as the model wrote it). An
// unknown tool, arguments that are not JSON or violate the schema, and a
// panicking tool all yield an observation that tells the model what went
// wrong, classed invalid_args (or internal for a panic).
func (r *Registry) Call(ctx context.Context, name string, args json.RawMessage) (obs Observation) {
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("tool panicked", "tool", name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			obs = failed(name, failure.ClassInternal, fmt.Sprintf("Tool %s failed with an internal error.", name), "panic")
		}
		obs.Meta.Tool = name
		if obs.Meta.Latency == 0 {
			obs.Meta.Latency = time.Since(start)
		}
		obs.Meta.Bytes = len(obs.Text)
		if r.metrics != nil {
			r.metrics.observe(obs.Meta)
		}
	}()
	e, ok := r.tools[name]
	if !ok {
		return failed(name, failure.ClassInvalidArgs,
			fmt.Sprintf("There is no tool named %q. Available tools: %s.", name, strings.Join(r.names, ", ")), "unknown tool")
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return failed(name, failure.ClassInvalidArgs,
			fmt.Sprintf("Invalid arguments for %s: the arguments are not valid JSON (%v). Send one JSON object matching the tool's parameters.", name, err), "arguments are not JSON")
	}
	if err := e.schema.Validate(v); err != nil {
		msg := describeViolation(err)
		return failed(name, failure.ClassInvalidArgs, fmt.Sprintf("Invalid arguments for %s: %s.", name, msg), msg)
	}
	return e.tool.Call(ctx, args)
}

func failed(tool string, class failure.Class, text, errText string) Observation {
	return Observation{Text: text, Meta: Meta{Tool: tool, Class: class, Error: errText}}
}

// describeViolation lists the leaf violations of a schema error, each with
// the JSON pointer of the offending value, in one line.
func describeViolation(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	p := message.NewPrinter(language.English)
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			at := "/" + strings.Join(e.InstanceLocation, "/")
			if at == "/" {
				at = "the arguments object"
			} else {
				at = "'" + at + "'"
			}
			parts = append(parts, at+": "+e.ErrorKind.LocalizedString(p))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(parts) > 5 {
		parts = append(parts[:5], fmt.Sprintf("and %d more", len(parts)-5))
	}
	return strings.Join(parts, "; ")
}
