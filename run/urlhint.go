package run

// routeURLProblems returns a problem, with the base URL to give, for every
// model endpoint URL that ends in a route (llm.EndpointConfig.CheckRouteURLs).
func (c Config) routeURLProblems() []error {
	var out []error
	for _, r := range []struct {
		role string
		flag string
		e    EndpointConfig
	}{{"planner", "planner-url", c.Planner}, {"executor", "executor-url", c.Executor}, {"judge", "judge-url", c.Judge}, {"reasoner", "", c.Reasoner}} {
		out = append(out, r.e.CheckRouteURLs(r.role, r.flag)...)
	}
	return out
}
