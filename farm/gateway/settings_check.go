package gateway

import (
	"net"
	"net/url"

	"github.com/mgrpo/mgrpo/internal/problems"
)

// Check reports the gateway keys of g that cannot work, naming key and
// flag: an address that is not HOST:PORT, URLs that are not http(s), a
// negative lease.
func (g Settings) Check() []error {
	var p problems.List
	if g.Addr != "" {
		host, port, err := net.SplitHostPort(g.Addr)
		switch {
		case err != nil:
			p.Add("gateway.addr", "gateway-addr", "%q: want HOST:PORT (e.g. 127.0.0.1:8700, or 0.0.0.0:8700 on every interface with --gateway-url)", g.Addr)
		case unspecifiedHost(host) && g.URL == "":
			p.Add("gateway.addr", "gateway-addr", "%q listens on every interface, which is no address an agent can call: "+
				"also give --gateway-url with the address agents reach this machine at (e.g. --gateway-url http://HOSTNAME:%s)", g.Addr, port)
		}
	}
	for _, u := range []struct{ key, flag, v string }{{"gateway.url", "gateway-url", g.URL}, {"gateway.agent_url", "agent-url", g.AgentURL}} {
		if u.v == "" {
			continue
		}
		if pu, err := url.Parse(u.v); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			p.Add(u.key, u.flag, "%q: want an http:// or https:// URL", u.v)
		}
	}
	if g.URL != "" && !g.Enabled() {
		p.Add("gateway.url", "gateway-url", "set with --agent-url (push) or --gateway-addr (pull); alone it does nothing")
	}
	if g.Lease.Duration < 0 {
		p.Add("gateway.lease", "", "%v: must not be negative (0: 2m)", g.Lease.Duration)
	}
	return p
}

// unspecifiedHost reports whether host binds every interface ("", 0.0.0.0,
// ::), so the bound address is not one to hand to agents.
func unspecifiedHost(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}
