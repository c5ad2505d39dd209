package ssrf

import (
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Host is a URL host split into its parts: Name is lower-case without
// brackets or trailing dot, Port is explicit or the scheme's default, and
// Addr is set when Name is an IP literal in canonical form.
type Host struct {
	Name string
	Port string
	Addr netip.Addr
}

// String returns "name:port" with brackets around IPv6 literals.
func (h Host) String() string { return net.JoinHostPort(h.Name, h.Port) }

// ParseHost extracts the host of u and refuses the forms a fetch must never
// reach whatever they resolve to: schemes other than http and https, user
// info, empty hosts, and numeric spellings that are not a canonical IP
// literal (http://2130706433/, http://0x7f.1/, http://017700000001/), which
// browsers and C resolvers read as IPv4 addresses.
func ParseHost(u *url.URL) (Host, error) {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return Host{}, &RefusedError{Reason: "scheme " + quote(scheme) + " is not http or https"}
	}
	if u.User != nil {
		return Host{}, &RefusedError{Reason: "URLs with user info are not fetched"}
	}
	name := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if name == "" {
		return Host{}, &RefusedError{Reason: "empty host"}
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	h := Host{Name: name, Port: port}
	if a, err := netip.ParseAddr(name); err == nil {
		h.Addr = a
		h.Name = a.String()
		return h, nil
	}
	if strings.ContainsAny(name, "%[]") || strings.Contains(name, ":") {
		return Host{}, &RefusedError{Host: name, Reason: "malformed IP literal"}
	}
	if numericHost(name) {
		return Host{}, &RefusedError{Host: name, Reason: "numeric host that is not a canonical IP address"}
	}
	return h, nil
}

// numericHost reports whether the last label of name is a number (decimal,
// octal or 0x-hex), the rule by which URL parsers treat a host as an IPv4
// address in one of its many spellings.
func numericHost(name string) bool {
	labels := strings.Split(name, ".")
	last := labels[len(labels)-1]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		for _, c := range last[2:] {
			if !strings.ContainsRune("0123456789abcdef", c) {
				return false
			}
		}
		return true
	}
	for _, c := range last {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func quote(s string) string {
	if s == "" {
		return `""`
	}
	return `"` + s + `"`
}
