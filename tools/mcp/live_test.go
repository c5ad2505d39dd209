package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mgrpo/mgrpo/tools"
)

type noArgs struct{}

func okTool(context.Context, *sdk.CallToolRequest, noArgs) (*sdk.CallToolResult, any, error) {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
}

// TestMCPToolListChange checks that a tool the server adds while the run
// goes on (announced by notifications/tools/list_changed) reaches the
// snapshots taken after the announcement, and that a snapshot taken before
// it, a rollout in flight, keeps its tools.
func TestMCPToolListChange(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "changing", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "alpha", Description: "the first tool"}, okTool)
	var l net.Listener
	for p := 18500; p < 18550 && l == nil; p++ {
		l, _ = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
	}
	if l == nil {
		t.Fatal("no free port in 18500-18549")
	}
	hs := &http.Server{Handler: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)}
	go func() { _ = hs.Serve(l) }()
	defer hs.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set, err := Open(ctx, Config{Servers: []ServerConfig{{Name: "chg", URL: "http://" + l.Addr().String() + "/mcp"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	base, err := tools.NewRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	all := func(s *Set) []tools.Tool {
		var out []tools.Tool
		for _, t := range s.MCPTools() {
			out = append(out, t)
		}
		return out
	}
	live, err := NewLiveToolbox(set, base, all, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	names := func(tb *tools.Registry) []string {
		var out []string
		for _, s := range tb.Specs() {
			out = append(out, s.Name)
		}
		return out
	}
	before := live.Snapshot(ctx)
	if got := names(before); !slices.Equal(got, []string{"alpha"}) {
		t.Fatalf("tools = %v, want [alpha]", got)
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "beta", Description: "added later"}, okTool)
	deadline := time.Now().Add(20 * time.Second)
	for len(set.Changed()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server's tools/list_changed did not arrive")
		}
		time.Sleep(20 * time.Millisecond)
	}
	after := live.Snapshot(ctx)
	if got := names(after); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Errorf("tools after the change = %v, want [alpha beta]", got)
	}
	if got := names(before); !slices.Equal(got, []string{"alpha"}) {
		t.Errorf("the earlier snapshot changed: %v", got)
	}
	if obs := after.Call(ctx, "beta", []byte(`{}`)); obs.Text != "ok" {
		t.Errorf("beta = %q (%s %s)", obs.Text, obs.Meta.Class, obs.Meta.Error)
	}
	if set.Version() != 2 {
		t.Errorf("version = %d, want 2", set.Version())
	}
}
