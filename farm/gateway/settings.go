package gateway

import "github.com/mgrpo/mgrpo/internal/yamlstrict"

// Settings are the gateway's keys of a run's configuration (its gateway
// key, read by the composition root): with an agent URL the farm pushes
// each rollout's task to the user's agent service; with a gateway address
// alone, agents pull tasks from the gateway.
type Settings struct {
	Addr     string              `yaml:"addr" flag:"gateway-addr" json:",omitempty" doc:"serve the gateway on {{HOST:PORT}} (default with agent_url: 127.0.0.1 on a free port; without agent_url, agents pull tasks from it)"`
	URL      string              `yaml:"url" flag:"gateway-url" json:",omitempty" doc:"the gateway's base {{URL}} as agents reach it, when it differs from http://ADDR"`
	AgentURL string              `yaml:"agent_url" flag:"agent-url" json:",omitempty" doc:"push: POST each rollout's task to this agent service {{URL}} and read its answer (docs/gateway.md)"`
	Lease    yamlstrict.Duration `yaml:"lease" json:",omitzero" doc:"pull: how long a task stays an agent's without a call, heartbeat or result (default 2m)"`
}

// Enabled reports whether the run's rollouts go through the gateway.
func (s Settings) Enabled() bool { return s.Addr != "" || s.AgentURL != "" }
