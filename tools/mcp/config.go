package mcp

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"
)

// Prefix rules say when a server's tools are offered under the server's
// name ("notes_search" for the tool "search" of server "notes").
const (
	// PrefixAuto prefixes a tool only when its name is taken, by a
	// built-in tool or by another server's tool.
	PrefixAuto = "auto"
	// PrefixAlways prefixes every tool of the server.
	PrefixAlways = "always"
	// PrefixNever never prefixes: a taken name is a configuration error.
	PrefixNever = "never"
)

// Defaults of a tool's policy.
const (
	DefaultTimeout      = 60 * time.Second
	DefaultConcurrency  = 8
	DefaultMaxChars     = 30000
	DefaultStartTimeout = 30 * time.Second
)

// ToolPolicy is how calls of one tool are made. Zero fields take the
// server's, then the defaults.
type ToolPolicy struct {
	// Timeout bounds one call; past it the call is cancelled (MCP
	// notifications/cancelled) and the observation is a timeout.
	Timeout time.Duration
	// Concurrency caps the calls of the tool in flight in this process;
	// more wait for a slot (bounded by their context).
	Concurrency int
	// Cache lets results be cached (off by default: most MCP tools are not
	// idempotent). Nil: the server's setting.
	Cache *bool
}

// ServerConfig is one MCP server: a command over stdio, or a URL for
// Streamable HTTP. Secrets arrive resolved (the run reads them from the
// environment); the package never reads the environment itself.
type ServerConfig struct {
	// Name identifies the server in tool prefixes, metrics (provider
	// "mcp:NAME"), prices and errors.
	Name string
	// Command and Args start a stdio server; Env is its whole environment
	// (KEY=VALUE), Dir its working directory ("" inherits).
	Command string
	Args    []string
	Env     []string
	Dir     string
	// URL is a Streamable HTTP endpoint; Headers are sent with every
	// request.
	URL     string
	Headers map[string]string
	// Allow lists the tools offered (empty: every tool the server lists).
	Allow []string
	// Prefix is PrefixAuto (""), PrefixAlways or PrefixNever.
	Prefix string
	// Policy applies to every tool; PerTool overrides it by tool name.
	Policy  ToolPolicy
	PerTool map[string]ToolPolicy
	// MaxChars caps an observation in characters (0: DefaultMaxChars).
	MaxChars int
	// StartTimeout bounds starting the server and listing its tools (0:
	// DefaultStartTimeout).
	StartTimeout time.Duration
}

// namePattern and maxName are a server name's rule, ^[a-zA-Z0-9_-]{1,40}$,
// with the length checked apart: a counted repetition compiles into 40
// copies of the class at every process's start.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

const maxName = 40

// Validate reports what makes the server's configuration unusable, without
// contacting it: a bad name, neither or both of command and url, an unknown
// prefix rule, a negative timeout or cap.
func (c ServerConfig) Validate() error {
	var errs []error
	if len(c.Name) > maxName || !namePattern.MatchString(c.Name) {
		errs = append(errs, fmt.Errorf("name %q: want 1 to 40 letters, digits, _ or -", c.Name))
	}
	switch {
	case c.Command == "" && c.URL == "":
		errs = append(errs, errors.New("command or url required (command for a stdio server, url for Streamable HTTP)"))
	case c.Command != "" && c.URL != "":
		errs = append(errs, errors.New("command and url both set: give one"))
	}
	if !slices.Contains([]string{"", PrefixAuto, PrefixAlways, PrefixNever}, c.Prefix) {
		errs = append(errs, fmt.Errorf("prefix %q: want auto, always or never", c.Prefix))
	}
	check := func(what string, p ToolPolicy) {
		if p.Timeout < 0 {
			errs = append(errs, fmt.Errorf("%stimeout %v: must not be negative", what, p.Timeout))
		}
		if p.Concurrency < 0 {
			errs = append(errs, fmt.Errorf("%sconcurrency %d: must not be negative", what, p.Concurrency))
		}
	}
	check("", c.Policy)
	for name, p := range c.PerTool {
		check("tools."+name+".", p)
	}
	if c.MaxChars < 0 {
		errs = append(errs, fmt.Errorf("max_chars %d: must not be negative", c.MaxChars))
	}
	return errors.Join(errs...)
}

// policy returns the effective policy of the tool named by the server.
func (c ServerConfig) policy(tool string) (timeout time.Duration, concurrency int, cache bool) {
	timeout, concurrency = DefaultTimeout, DefaultConcurrency
	if c.Policy.Timeout > 0 {
		timeout = c.Policy.Timeout
	}
	if c.Policy.Concurrency > 0 {
		concurrency = c.Policy.Concurrency
	}
	if c.Policy.Cache != nil {
		cache = *c.Policy.Cache
	}
	if p, ok := c.PerTool[tool]; ok {
		if p.Timeout > 0 {
			timeout = p.Timeout
		}
		if p.Concurrency > 0 {
			concurrency = p.Concurrency
		}
		if p.Cache != nil {
			cache = *p.Cache
		}
	}
	return timeout, concurrency, cache
}

// transport names the server's transport for messages.
func (c ServerConfig) transport() string {
	if c.URL != "" {
		return "streamable HTTP"
	}
	return "stdio"
}

func (c ServerConfig) startTimeout() time.Duration {
	if c.StartTimeout > 0 {
		return c.StartTimeout
	}
	return DefaultStartTimeout
}
