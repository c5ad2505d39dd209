package run

import (
	"fmt"
	"net/url"
	"strings"
)

// routeSuffixes are the routes users paste whole where mgrpo wants a base
// URL: the client adds them itself, so a full route makes every call (and
// the /health probe) 404.
var routeSuffixes = []string{"/chat/completions", "/completions", "/models", "/generate", "/health", "/embeddings", "/responses"}

// routeURLProblems returns a problem, with the base URL to give, for every
// model endpoint URL that ends in a route.
func (c Config) routeURLProblems() []error {
	var out []error
	for _, r := range []struct {
		role string
		flag string
		e    EndpointConfig
	}{{"planner", "planner-url", c.Planner}, {"executor", "executor-url", c.Executor}, {"judge", "judge-url", c.Judge}, {"reasoner", "", c.Reasoner}} {
		for _, raw := range r.e.URLs {
			u, err := url.Parse(raw)
			if err != nil {
				continue
			}
			path := strings.TrimSuffix(u.Path, "/")
			for _, suf := range routeSuffixes {
				if strings.HasSuffix(path, suf) {
					base := *u
					base.Path = strings.TrimSuffix(path, suf)
					base.RawQuery = ""
					out = append(out, fmt.Errorf("%s: %s is a route, not a base URL: give %s (the client adds %s itself)", name(r.role+".urls", r.flag), raw, base.String(), suf))
					break
				}
			}
		}
	}
	return out
}
