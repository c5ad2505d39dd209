package mcp

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/internal/yamlstrict"
)

// TestValidName holds the split check to the name rule
// ^[a-zA-Z0-9_-]{1,40}$.
func TestValidName(t *testing.T) {
	pattern := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,40}$`)
	for _, name := range []string{"", "kb", "my_server-2", strings.Repeat("x", 40), strings.Repeat("x", 41), "a.b", "a b", "ü"} {
		if got, want := validName(name), pattern.MatchString(name); got != want {
			t.Errorf("validName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestSpecsServers: ${NAME} references are read through the function the
// caller gives, a stdio server gets only the listed variables of the
// caller's environment plus its env (sorted), and the policies carry over.
func TestSpecsServers(t *testing.T) {
	env := map[string]string{"PATH": "/bin", "SECRET": "s3", "OTHER": "leak"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	yes := true
	ss := Specs{
		{Name: "kb", Command: "kb-server", Env: map[string]string{"B": "x", "A": "${SECRET}", "C": "${UNSET}"},
			SpecPolicy: SpecPolicy{Timeout: yamlstrict.Duration{Duration: time.Second}}, Tools: map[string]SpecPolicy{"q": {Cache: &yes}}},
		{Name: "web", URL: "https://x/mcp", Headers: map[string]string{"X-Key": "k-${SECRET}"}},
	}
	got := ss.Servers(lookup)
	if want := []string{"PATH=/bin", "A=s3", "B=x", "C="}; !reflect.DeepEqual(got[0].Env, want) {
		t.Errorf("stdio env = %q, want %q", got[0].Env, want)
	}
	if got[0].Policy.Timeout != time.Second || got[0].PerTool["q"].Cache == nil || !*got[0].PerTool["q"].Cache {
		t.Errorf("policies = %+v %+v", got[0].Policy, got[0].PerTool)
	}
	if got[1].Env != nil || got[1].Headers["X-Key"] != "k-s3" {
		t.Errorf("http server: env %q, headers %q", got[1].Env, got[1].Headers)
	}
	err := ss.CheckEnv(lookup, func(string) (string, error) { return "", nil })
	if err == nil || !strings.Contains(err.Error(), "tools.mcp.kb.env.C: names ${UNSET}") {
		t.Errorf("CheckEnv = %v, want the unset variable named by its key", err)
	}
}
