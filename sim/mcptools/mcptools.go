// Package mcptools is the simulated world's MCP server, so that offline
// runs exercise the agents' MCP tools: a calculator, and a notes store
// over the synthetic web's facts, served over Streamable HTTP (stateless,
// JSON answers) by the official Go SDK.
//
// The notes hold some of each entity's facts (every other one, in the
// order of its page), so they help an executor without replacing the web.
// Answers depend only on the arguments and the web's seed.
//
// Like the rest of the sim it imports none of the client packages.
package mcptools

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mgrpo/mgrpo/sim/web"
)

// The tools the server offers; the sim's policy knows them by these names
// (or prefixed: SERVER_notes_lookup).
const (
	ToolNotes      = "notes_lookup"
	ToolCalculator = "calculator"
)

// Path is where the sim's web serves the MCP server.
const Path = "/mcp"

type notesArgs struct {
	Entity string `json:"entity" jsonschema:"the exact name of a person, place, organisation or work"`
}

type calcArgs struct {
	Expression string `json:"expression" jsonschema:"an arithmetic expression of numbers, + - * / and parentheses"`
}

// NewServer returns the MCP server over w.
func NewServer(w *web.World) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mgrpo-sim", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: ToolNotes, Description: "Look up the research notes kept about an entity: some of its facts, one sentence each."},
		func(_ context.Context, _ *mcp.CallToolRequest, a notesArgs) (*mcp.CallToolResult, any, error) {
			return notes(w, a.Entity), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolCalculator, Description: "Evaluate an arithmetic expression (+ - * / and parentheses) and return the number."},
		func(_ context.Context, _ *mcp.CallToolRequest, a calcArgs) (*mcp.CallToolResult, any, error) {
			v, err := evaluate(a.Expression)
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "cannot evaluate: " + err.Error()}}}, nil, nil
			}
			return text(strconv.FormatFloat(v, 'g', -1, 64)), nil, nil
		})
	return s
}

// Handler serves the server over Streamable HTTP, stateless and with JSON
// answers: no session to lose, one answer per request.
func Handler(w *web.World, logger *slog.Logger) http.Handler {
	s := NewServer(w)
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: logger})
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// notes answers a lookup: every other fact of the entity (the first, the
// third, …) as the web's sentences, or that there are no notes.
func notes(w *web.World, entity string) *mcp.CallToolResult {
	entity = strings.TrimSpace(entity)
	facts, ok := w.Facts(entity)
	if !ok || len(facts) == 0 {
		return text(fmt.Sprintf("No notes about %s.", entity))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Notes about %s:", entity)
	for i, f := range facts {
		if i%2 == 0 {
			b.WriteString("\n- " + web.FactSentence(f))
		}
	}
	return text(b.String())
}
