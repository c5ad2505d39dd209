package run

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/mgrpo/mgrpo/tools/mcp"
)

// everythingArgs returns node's arguments starting the pinned
// server-everything over stdio, skipping without node_modules.
func everythingArgs(t *testing.T) []string {
	t.Helper()
	p, err := filepath.Abs("../tools/mcp/testdata/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skip("server-everything is not installed: run `npm ci` in tools/mcp/testdata/npm (.ci/run does)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH")
	}
	return []string{p, "stdio"}
}

func mcpConfig(t *testing.T, text string) Config {
	t.Helper()
	c := DefaultConfig()
	if err := yaml.UnmarshalWithOptions([]byte(text), &c.Tools, yaml.DisallowUnknownField()); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	return c
}

// TestMCPConfigErrors checks that what makes tools.mcp unusable is a
// configuration error naming the key, found by validation or when the
// servers start, before any rollout.
func TestMCPConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"no name", "mcp: [{command: node}]", "tools.mcp[0].name: required"},
		{"neither command nor url", "mcp: [{name: kb}]", "tools.mcp.kb.command: required (or url)"},
		{"both", "mcp: [{name: kb, command: node, url: 'http://x/mcp'}]", "tools.mcp.kb.url: command and url both set"},
		{"bad url", "mcp: [{name: kb, url: 'ftp://x'}]", "tools.mcp.kb.url: \"ftp://x\": want an http:// or https:// URL"},
		{"sim without --sim", "mcp: [{name: kb, url: sim}]", "tools.mcp.kb.url: sim needs --sim"},
		{"prefix", "mcp: [{name: kb, command: node, prefix: sometimes}]", "tools.mcp.kb.prefix: \"sometimes\""},
		{"role", "mcp: [{name: kb, command: node, roles: [judge]}]", "tools.mcp.kb.roles: \"judge\""},
		{"duplicate server", "mcp: [{name: kb, command: node}, {name: kb, command: node}]", "tools.mcp.kb.name: \"kb\": two servers"},
		{"price of an unknown server", "mcp: [{name: kb, command: node}]\n", "prices.mcp_call.wiki.search: names no server of tools.mcp (unknown server \"wiki\")"},
		{"negative timeout", "mcp: [{name: kb, command: node, tools: {q: {timeout: -1s}}}]", "tools.mcp.kb.tools.q.timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mcpConfig(t, tc.yaml)
			c.Prices.MCPCall = map[string]float64{"kb": 0.001}
			if tc.name == "price of an unknown server" {
				c.Prices.MCPCall["wiki.search"] = 0.002
			}
			c.Out, c.Sim = t.TempDir(), false
			c.Tasks = "tasks.jsonl"
			c.Planner.URLs, c.Planner.Model = []string{"http://p"}, "m"
			c.Executor.URLs, c.Executor.Model = []string{"http://e"}, "m"
			err := c.Validate()
			if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want ErrConfig saying %q", err, tc.want)
			}
		})
	}
}

// TestMCPStartErrors checks the errors found when the servers start:
// each wraps ErrConfig (exit 2) and names the server's key.
func TestMCPStartErrors(t *testing.T) {
	args := func(t *testing.T) string { return "[" + strings.Join(everythingArgs(t), ", ") + "]" }
	for _, tc := range []struct {
		name string
		yaml func(t *testing.T) string
		want []string
	}{
		{"missing command", func(t *testing.T) string { return "mcp: [{name: kb, command: /nonexistent/mcp-kb}]" },
			[]string{"tools.mcp.kb.command", "not found"}},
		{"unset variable", func(t *testing.T) string {
			return "mcp: [{name: kb, url: 'http://127.0.0.1:18549/mcp', headers: {X-Key: '${MGRPO_TEST_UNSET_VAR}'}}]"
		},
			[]string{"tools.mcp.kb.headers.X-Key", "MGRPO_TEST_UNSET_VAR"}},
		{"url that does not answer", func(t *testing.T) string { return "mcp: [{name: far, url: 'http://127.0.0.1:18549/mcp'}]" },
			[]string{"tools.mcp.far: did not start or list its tools", "connect to http://127.0.0.1:18549/mcp"}},
		{"garbage on stdout", func(t *testing.T) string {
			return `mcp: [{name: noisy, command: sh, args: [-c, "echo hello; echo oops >&2; sleep 30"]}]`
		},
			[]string{"tools.mcp.noisy: did not start", "not a JSON-RPC message: \"hello\"", "oops"}},
		{"duplicate tool names without a prefix", func(t *testing.T) string {
			return "mcp: [{name: a, command: node, args: " + args(t) + ", allow: [echo], prefix: never}, {name: b, command: node, args: " + args(t) + ", allow: [echo], prefix: never}]"
		}, []string{"tools.mcp.b.prefix", `"echo" collides`}},
		{"allow names an unknown tool", func(t *testing.T) string {
			return "mcp: [{name: a, command: node, args: " + args(t) + ", allow: [nope]}]"
		},
			[]string{"tools.mcp.a.allow", `"nope" is not a tool of this server`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mcpConfig(t, tc.yaml(t))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			set, err := openMCP(ctx, c, nil, nil)
			if err == nil {
				set.Close()
				t.Fatal("openMCP succeeded")
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("error %v does not wrap ErrConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestMCPPrefixAndRoles checks the auto prefix rule and the roles: two
// servers listing echo offer a_echo and b_echo; the planner gets only the
// tools of servers that name it.
func TestMCPPrefixAndRoles(t *testing.T) {
	args := "[" + strings.Join(everythingArgs(t), ", ") + "]"
	c := mcpConfig(t, "mcp: [{name: a, command: node, args: "+args+", allow: [echo, get-sum]}, {name: b, command: node, args: "+args+", allow: [echo], roles: [planner]}]")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	set, err := openMCP(ctx, c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	names := func(role string) string {
		var out []string
		for _, tl := range c.Tools.MCP.Tools(set, role) {
			out = append(out, tl.Spec().Name)
		}
		return strings.Join(out, ",")
	}
	if got, want := names(mcp.RoleExecutor), "a_echo,get-sum"; got != want {
		t.Errorf("executor tools = %s, want %s", got, want)
	}
	if got, want := names(mcp.RolePlanner), "b_echo"; got != want {
		t.Errorf("planner tools = %s, want %s", got, want)
	}
}

// TestMCPInRunRecord checks that a run without MCP servers writes the run
// record it wrote before (no tools key), and that one with servers hands
// them to its workers unexpanded (${NAME} is read by each process).
func TestMCPInRunRecord(t *testing.T) {
	rec, err := DefaultConfig().RunRecordConfig()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec), "Tools") {
		t.Errorf("record without MCP servers names Tools: %s", rec)
	}
	c := mcpConfig(t, "mcp: [{name: kb, url: 'https://kb.example/mcp', headers: {X-Key: '${KB_KEY}'}, tools: {q: {cache: true}}}]")
	rec, err = c.RunRecordConfig()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ConfigFromRunRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	got := back.Tools.MCP
	if len(got) != 1 || got[0].Headers["X-Key"] != "${KB_KEY}" || got[0].Tools["q"].Cache == nil || !*got[0].Tools["q"].Cache {
		t.Errorf("workers get %+v", got)
	}
}
