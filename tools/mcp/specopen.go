package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mgrpo/mgrpo/tools"
)

// Open starts the servers of ss with c's reserved names, cache and logger
// (c.Servers is ss's, read by lookupEnv) and lists their tools: the MCP
// preflight. A server that does not start or list its tools, and a tool
// list that cannot be offered, are errors naming the server's key, with a
// stdio server's stderr's last lines; every error of Open is the
// configuration's.
func (ss Specs) Open(ctx context.Context, c Config, lookupEnv func(string) (string, bool)) (*Set, error) {
	c.Servers = ss.Servers(lookupEnv)
	set, err := Open(ctx, c)
	if err == nil {
		return set, nil
	}
	var ce *ConfigError
	if errors.As(err, &ce) && ss.Index(ce.Server) >= 0 {
		return nil, fmt.Errorf("%s: %s", ss.Key(ss.Index(ce.Server), ce.Key), ce.Msg)
	}
	var lines []string
	for _, e := range unjoin(err) {
		var se *ServerError
		if errors.As(e, &se) && ss.Index(se.Server) >= 0 {
			lines = append(lines, fmt.Sprintf("%s: did not start or list its tools: %v", ss.Key(ss.Index(se.Server), ""), se.Err))
			continue
		}
		lines = append(lines, SpecsKey+": "+e.Error())
	}
	return nil, fmt.Errorf("before starting, an MCP server failed:\n%s", strings.Join(lines, "\n"))
}

// unjoin splits an errors.Join error into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Tools returns the tools of set whose servers give them to role.
func (ss Specs) Tools(set *Set, role string) []tools.Tool {
	if set == nil {
		return nil
	}
	give := map[string]bool{}
	for _, s := range ss {
		give[s.Name] = slices.Contains(s.RoleList(), role)
	}
	var out []tools.Tool
	for _, t := range set.MCPTools() {
		if give[t.Server()] {
			out = append(out, t)
		}
	}
	return out
}

// List prints every tool of set as the model would see it (List), with
// the roles ss gives its server.
func (ss Specs) List(set *Set, w io.Writer) error {
	roles := map[string]string{}
	for _, s := range ss {
		roles[s.Name] = strings.Join(s.RoleList(), ",")
	}
	return List(set, roles, w)
}

// One returns the list of the server named server alone; a server ss does
// not hold is an error naming those it does.
func (ss Specs) One(server string) (Specs, error) {
	i := ss.Index(server)
	if i < 0 {
		names := make([]string, len(ss))
		for j, s := range ss {
			names[j] = s.Name
		}
		return nil, fmt.Errorf("server %q: not in %s (it has %s)", server, SpecsKey, strings.Join(names, ", "))
	}
	return Specs{ss[i]}, nil
}
