package mcptools

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mgrpo/mgrpo/sim/web"
)

func TestServerTools(t *testing.T) {
	w, err := web.Generate(web.Config{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := NewServer(w).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	for _, tc := range []struct {
		expr, want string
		isErr      bool
	}{{"2 + 3 * 4", "14", false}, {"(1 + 2) / 4", "0.75", false}, {"-(2 - 5)", "3", false}, {"1 / 0", "division by zero", true}, {"2 +", "ends early", true}} {
		got, isErr := call(ToolCalculator, map[string]any{"expression": tc.expr})
		if !strings.Contains(got, tc.want) || isErr != tc.isErr {
			t.Errorf("calculator(%q) = %q (error %v), want %q (error %v)", tc.expr, got, isErr, tc.want, tc.isErr)
		}
	}
	subject := w.Questions[0].Chain.Entity
	facts, _ := w.Facts(subject)
	got, _ := call(ToolNotes, map[string]any{"entity": subject})
	if !strings.Contains(got, web.FactSentence(facts[0])) {
		t.Errorf("notes about %s = %q, want its first fact %q", subject, got, web.FactSentence(facts[0]))
	}
	if len(facts) > 1 && strings.Contains(got, web.FactSentence(facts[1])) {
		t.Errorf("notes hold every fact: %q", got)
	}
	if got, _ := call(ToolNotes, map[string]any{"entity": "Nobody Atall"}); !strings.HasPrefix(got, "No notes") {
		t.Errorf("unknown entity: %q", got)
	}
}
