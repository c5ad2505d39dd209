package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/semaphore"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/tools"
	"github.com/mgrpo/mgrpo/tools/cache"
)

// Tool is one allowed tool of an MCP server as the model sees it: the
// offered name (the server's, prefixed when the prefix rule says so), the
// server's description and input schema. Safe for concurrent use.
type Tool struct {
	srv      *server
	remote   string // the name the server knows
	spec     tools.Spec
	timeout  time.Duration
	slots    *semaphore.Weighted
	cache    cache.Cache // nil unless the tool's results may be cached
	cacheTTL time.Duration
	maxChars int
}

var _ tools.Tool = (*Tool)(nil)

// Spec implements tools.Tool.
func (t *Tool) Spec() tools.Spec { return t.spec }

// Server returns the name of the tool's server; Remote the tool's name on
// it.
func (t *Tool) Server() string { return t.srv.cfg.Name }

// Remote returns the tool's name on its server.
func (t *Tool) Remote() string { return t.remote }

// Provider is the metrics' provider label of a server's tools.
func Provider(server string) string { return "mcp:" + server }

// Call implements tools.Tool: it waits for one of the tool's slots, calls
// the tool on the server's session with the tool's timeout (past it the
// SDK sends notifications/cancelled) and turns the result into an
// observation. A session found broken is dropped so that the next call
// starts the server again.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) tools.Observation {
	start := time.Now()
	meta := tools.Meta{Tool: t.spec.Name, Provider: Provider(t.srv.cfg.Name), Requests: 1}
	fail := func(class failure.Class, text, errText string) tools.Observation {
		meta.Class, meta.Error, meta.Latency = class, errText, time.Since(start)
		return tools.Observation{Text: text, Meta: meta}
	}
	var key string
	if t.cache != nil {
		key = cacheKey(t.srv.cfg.Name, t.remote, args)
		if b, ok, err := t.cache.Get(ctx, key); err == nil && ok {
			meta.CacheHit, meta.CacheHits, meta.Latency = true, 1, time.Since(start)
			return tools.Observation{Text: string(b), Meta: meta}
		}
	}
	var arguments map[string]any
	if err := json.Unmarshal(args, &arguments); err != nil {
		return fail(failure.ClassInvalidArgs, fmt.Sprintf("Invalid arguments for %s: send one JSON object.", t.spec.Name), "arguments are not a JSON object")
	}
	cctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	if err := t.slots.Acquire(cctx, 1); err != nil {
		return t.failure(fail, ctx, err, "waiting for a free slot")
	}
	defer t.slots.Release(1)
	sess, err := t.srv.session(cctx)
	if err != nil {
		return t.failure(fail, ctx, err, "starting the server")
	}
	meta.Upstream = 1
	res, err := sess.CallTool(cctx, &sdk.CallToolParams{Name: t.remote, Arguments: arguments})
	if err != nil {
		if errors.Is(err, sdk.ErrConnectionClosed) {
			t.srv.drop(sess)
		}
		return t.failure(fail, ctx, err, "calling it")
	}
	text := t.render(res)
	if res.IsError {
		return fail(failure.ClassToolError, fmt.Sprintf("Tool %s reported an error:\n%s", t.spec.Name, text), firstLine(text))
	}
	if t.cache != nil {
		_ = t.cache.Set(ctx, key, []byte(text), t.cacheTTL)
	}
	meta.Latency = time.Since(start)
	return tools.Observation{Text: text, Meta: meta}
}

// failure turns a call's error into an observation: a deadline of the
// tool's own timeout is a timeout (an outage of the tool, as for any
// provider), the caller's cancellation is canceled, a JSON-RPC error is the
// tool's (invalid_args for invalid params), anything else (the session
// lost, the server not starting) is a network failure.
func (t *Tool) failure(fail func(failure.Class, string, string) tools.Observation, caller context.Context, err error, during string) tools.Observation {
	msg := t.srv.redact(err.Error())
	var rpc *jsonrpc.Error
	switch {
	case errors.Is(caller.Err(), context.Canceled):
		return fail(failure.ClassCanceled, fmt.Sprintf("Tool %s was canceled.", t.spec.Name), msg)
	case errors.Is(err, context.DeadlineExceeded):
		return fail(failure.ClassTimeout, fmt.Sprintf("Tool %s timed out after %v while %s; it was cancelled.", t.spec.Name, t.timeout, during), msg)
	case errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeInvalidParams:
		return fail(failure.ClassInvalidArgs, fmt.Sprintf("Invalid arguments for %s: %s.", t.spec.Name, rpc.Message), msg)
	case errors.As(err, &rpc):
		return fail(failure.ClassToolError, fmt.Sprintf("Tool %s failed: %s.", t.spec.Name, rpc.Message), msg)
	}
	return fail(failure.ClassNetwork, fmt.Sprintf("Tool %s is unavailable: its server failed while %s.", t.spec.Name, during), msg)
}

// render turns a result's content into observation text: text as it is,
// other content summarised by type and size, structured content as JSON
// when there is nothing else, capped at maxChars characters.
func (t *Tool) render(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s %q]", c.URI, c.Name))
		case *sdk.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
				parts = append(parts, "[resource]")
			case r.Text != "":
				parts = append(parts, r.Text)
			default:
				parts = append(parts, fmt.Sprintf("[resource %s %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			b, _ := json.Marshal(c)
			parts = append(parts, fmt.Sprintf("[%T content, %d bytes]", c, len(b)))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	text := strings.Join(parts, "\n")
	if len(parts) == 0 {
		text = "(no content)"
	}
	return capText(text, t.maxChars)
}

// capText keeps the first max characters of s and says how many were cut.
func capText(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max]) + fmt.Sprintf("\n[… %d more characters cut]", len(r)-max)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	if len(l) > 200 {
		l = l[:200]
	}
	return l
}

// cacheKey keys a result by server, tool and the arguments in canonical
// form (object keys sorted), so that key order does not matter.
func cacheKey(server, tool string, args json.RawMessage) string {
	var v any
	canon := string(args)
	if json.Unmarshal(args, &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			canon = string(b)
		}
	}
	return cache.Key("mcp", server, tool, canon)
}

// Policy returns the tool's call timeout, concurrency cap and whether its
// results are cached.
func (t *Tool) Policy() (timeout time.Duration, concurrency int, cached bool) {
	_, concurrency, cached = t.srv.cfg.policy(t.remote)
	return t.timeout, concurrency, cached && t.cache != nil
}
