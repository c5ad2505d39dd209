package mcp

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/mgrpo/mgrpo/internal/yamlstrict"
)

// SpecsKey is the configuration file's key of the servers' list.
const SpecsKey = "tools.mcp"

// SimURL is the url of a Spec that names the simulated world's MCP server
// (a run with sim).
const SimURL = "sim"

// The roles that may get a server's tools.
const (
	RoleExecutor = "executor"
	RolePlanner  = "planner"
	RoleSingle   = "single"
)

// Spec is one MCP server as a run's configuration file describes it:
// values of env and headers may name environment variables as ${NAME},
// read when the run starts (Specs.Servers), so that secrets stay out of
// the file.
type Spec struct {
	Name    string            `yaml:"name"`
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
	// Allow lists the tools offered (empty: all the server lists).
	Allow        []string `yaml:"allow"`
	Prefix       string   `yaml:"prefix"`
	SpecPolicy   `yaml:",inline"`
	MaxChars     int                 `yaml:"max_chars"`
	StartTimeout yamlstrict.Duration `yaml:"start_timeout"`
	// Roles get the server's tools: executor (default), planner, single.
	Roles []string              `yaml:"roles"`
	Tools map[string]SpecPolicy `yaml:"tools"`
}

// SpecPolicy is how a server's tools (or one of them) are called, as the
// file writes it.
type SpecPolicy struct {
	Timeout     yamlstrict.Duration `yaml:"timeout"`
	Concurrency int                 `yaml:"concurrency"`
	Cache       *bool               `yaml:"cache"`
}

// policy returns p as the servers take it.
func (p SpecPolicy) policy() ToolPolicy {
	return ToolPolicy{Timeout: p.Timeout.Duration, Concurrency: p.Concurrency, Cache: p.Cache}
}

// RoleList returns the roles of the server (executor by default).
func (s Spec) RoleList() []string {
	if len(s.Roles) == 0 {
		return []string{RoleExecutor}
	}
	return s.Roles
}

// Specs is the configuration's list of MCP servers.
type Specs []Spec

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// validName reports whether name is a valid MCP server name.
func validName(name string) bool { return len(name) <= maxName && namePattern.MatchString(name) }

// Key names server i's key in errors: tools.mcp.NAME.KEY, or
// tools.mcp[I].KEY when the entry has no usable name.
func (ss Specs) Key(i int, key string) string {
	base := fmt.Sprintf("%s[%d]", SpecsKey, i)
	if s := ss[i]; s.Name != "" && validName(s.Name) {
		base = SpecsKey + "." + s.Name
	}
	if key == "" {
		return base
	}
	return base + "." + key
}

// Index returns the position of the server named name, -1 when none is.
func (ss Specs) Index(name string) int {
	return slices.IndexFunc(ss, func(s Spec) bool { return s.Name == name })
}

// Check reports what makes the list unusable without contacting a server,
// each problem as "KEY: what is wrong": a missing or repeated name,
// neither or both of command and url, an unknown prefix rule or role,
// negative limits, a url of sim without sim.
func (ss Specs) Check(sim bool) []error {
	var errs []error
	seen := map[string]bool{}
	for i, s := range ss {
		add := func(k, format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s: %s", ss.Key(i, k), fmt.Sprintf(format, args...)))
		}
		switch {
		case s.Name == "":
			add("name", "required: the server's name (prefixes, metrics, prices)")
		case !validName(s.Name):
			add("name", "%q: want 1 to 40 letters, digits, _ or -", s.Name)
		case seen[s.Name]:
			add("name", "%q: two servers have this name", s.Name)
		}
		seen[s.Name] = true
		switch {
		case s.Command == "" && s.URL == "":
			add("command", "required (or url): the command of a stdio server, or the url of a Streamable HTTP one")
		case s.Command != "" && s.URL != "":
			add("url", "command and url both set: give one")
		case s.Command != "":
			if len(s.Headers) > 0 {
				add("headers", "only for a url (Streamable HTTP) server")
			}
		case s.URL == SimURL:
			if !sim {
				add("url", "sim needs --sim (the simulated world serves the MCP server)")
			}
		case !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
			add("url", "%q: want an http:// or https:// URL (or sim with --sim)", s.URL)
		}
		s.checkLimits(add)
	}
	return errs
}

// checkLimits reports the server's unknown prefix rule or roles and its
// negative limits.
func (s Spec) checkLimits(add func(k, format string, args ...any)) {
	if !slices.Contains([]string{"", PrefixAuto, PrefixAlways, PrefixNever}, s.Prefix) {
		add("prefix", "%q: want auto (prefix a taken name with the server's), always or never", s.Prefix)
	}
	for _, r := range s.Roles {
		if !slices.Contains([]string{RoleExecutor, RolePlanner, RoleSingle}, r) {
			add("roles", "%q: want executor, planner or single", r)
		}
	}
	pol := map[string]SpecPolicy{"": s.SpecPolicy}
	for n, tp := range s.Tools {
		pol["tools."+n+"."] = tp
	}
	for at, tp := range pol {
		if tp.Timeout.Duration < 0 {
			add(at+"timeout", "%v: must not be negative (0: 60s)", tp.Timeout.Duration)
		}
		if tp.Concurrency < 0 {
			add(at+"concurrency", "%d: must not be negative (0: 8)", tp.Concurrency)
		}
	}
	if s.MaxChars < 0 {
		add("max_chars", "%d: must not be negative (0: 30000)", s.MaxChars)
	}
}

// CheckEnv reports what of the list this machine cannot serve, checked
// when the servers start (so that a file validates anywhere): a command
// lookPath does not find, a ${NAME} of env or headers lookupEnv does not
// have. The caller passes exec.LookPath and os.LookupEnv: the package reads
// no environment itself.
func (ss Specs) CheckEnv(lookupEnv func(string) (string, bool), lookPath func(string) (string, error)) error {
	var errs []error
	for i, s := range ss {
		add := func(k, format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s: %s", ss.Key(i, k), fmt.Sprintf(format, args...)))
		}
		if s.Command != "" {
			if _, err := lookPath(s.Command); err != nil {
				add("command", "%q: not found (%v)", s.Command, err)
			}
		}
		for _, m := range []struct {
			k string
			v map[string]string
		}{{"env", s.Env}, {"headers", s.Headers}} {
			for name, v := range m.v {
				for _, ref := range envRef.FindAllStringSubmatch(v, -1) {
					if _, ok := lookupEnv(ref[1]); !ok {
						add(m.k+"."+name, "names ${%s}, which is not set in the environment", ref[1])
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// Servers turns the list into the servers' configurations, the ${NAME}
// references of env and headers read by lookupEnv (the caller's
// os.LookupEnv). A stdio server's environment is PATH, HOME, TMPDIR, LANG
// and USER of the caller plus its env: the run's own secrets do not leak
// to it.
func (ss Specs) Servers(lookupEnv func(string) (string, bool)) []ServerConfig {
	var out []ServerConfig
	expand := func(v string) string {
		return envRef.ReplaceAllStringFunc(v, func(m string) string {
			val, _ := lookupEnv(envRef.FindStringSubmatch(m)[1])
			return val
		})
	}
	for _, s := range ss {
		sc := ServerConfig{Name: s.Name, Command: s.Command, Args: s.Args, URL: s.URL, Allow: s.Allow, Prefix: s.Prefix,
			Policy: s.SpecPolicy.policy(), MaxChars: s.MaxChars, StartTimeout: s.StartTimeout.Duration}
		if s.Command != "" {
			for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG", "USER"} {
				if v, ok := lookupEnv(k); ok {
					sc.Env = append(sc.Env, k+"="+v)
				}
			}
			keys := make([]string, 0, len(s.Env))
			for k := range s.Env {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				sc.Env = append(sc.Env, k+"="+expand(s.Env[k]))
			}
		}
		if len(s.Headers) > 0 {
			sc.Headers = map[string]string{}
			for k, v := range s.Headers {
				sc.Headers[k] = expand(v)
			}
		}
		if len(s.Tools) > 0 {
			sc.PerTool = map[string]ToolPolicy{}
			for n, tp := range s.Tools {
				sc.PerTool[n] = tp.policy()
			}
		}
		out = append(out, sc)
	}
	return out
}
