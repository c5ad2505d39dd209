package ssrf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Resolver looks up the addresses of a host name. *net.Resolver satisfies
// it; tests inject one that maps names to private addresses.
type Resolver interface {
	// LookupNetIP returns the addresses of host for network "ip", "ip4"
	// or "ip6". It returns an error when the name does not resolve.
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config configures a Guard.
type Config struct {
	// Allow lists hosts that are opened whatever they resolve to, each
	// "HOST" (every port) or "HOST:PORT" (that port only). IPv6 literals
	// may be bracketed.
	Allow []string
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
	// DialTimeout bounds one TCP connect; 0 means 10s.
	DialTimeout time.Duration
}

// Guard decides which hosts and addresses outbound fetches may reach. It is
// safe for concurrent use.
type Guard struct {
	hosts    map[string]bool // "name" (any port)
	hostPort map[string]bool // "name:port"
	resolver Resolver
	timeout  time.Duration
}

// New returns a Guard for cfg. An allow entry that does not parse is a
// configuration error.
func New(cfg Config) (*Guard, error) {
	g := &Guard{
		hosts:    map[string]bool{},
		hostPort: map[string]bool{},
		resolver: cfg.Resolver,
		timeout:  cfg.DialTimeout,
	}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	if g.timeout <= 0 {
		g.timeout = 10 * time.Second
	}
	for _, a := range cfg.Allow {
		if err := g.addAllow(a); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (g *Guard) addAllow(entry string) error {
	e := strings.TrimSpace(entry)
	if e == "" {
		return fmt.Errorf("allow host %q: empty", entry)
	}
	host, port := e, ""
	if h, p, err := net.SplitHostPort(e); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(e, "[") && strings.HasSuffix(e, "]") {
		host = e[1 : len(e)-1]
	}
	host = normalName(host)
	if host == "" || strings.ContainsAny(host, "/?#@ ") {
		return fmt.Errorf("allow host %q: not a host", entry)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("allow host %q: bad port", entry)
		}
	}
	if port == "" {
		g.hosts[host] = true
		return nil
	}
	g.hostPort[net.JoinHostPort(host, port)] = true
	return nil
}

func normalName(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		return a.String()
	}
	return host
}

// Allowed reports whether h is opened by the allow-list.
func (g *Guard) Allowed(h Host) bool {
	name := normalName(h.Name)
	return g.hosts[name] || g.hostPort[net.JoinHostPort(name, h.Port)]
}

// CheckURL returns nil when a fetch of u may proceed: the scheme is http or
// https and the host is allow-listed, or is a public IP literal, or is a
// name all of whose addresses are public. Refusals match ErrRefused; a name
// that does not resolve yields the resolver's error.
func (g *Guard) CheckURL(ctx context.Context, u *url.URL) error {
	h, err := ParseHost(u)
	if err != nil {
		return err
	}
	if g.Allowed(h) {
		return nil
	}
	_, err = g.resolve(ctx, h)
	return err
}

// resolve returns the checked addresses of h (not allow-listed).
func (g *Guard) resolve(ctx context.Context, h Host) ([]netip.Addr, error) {
	if h.Addr.IsValid() {
		if err := CheckAddr(h.Addr); err != nil {
			return nil, withHost(err, h.Name)
		}
		return []netip.Addr{h.Addr}, nil
	}
	addrs, err := g.resolver.LookupNetIP(ctx, "ip", h.Name)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", h.Name, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", h.Name)
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		// Resolvers hand IPv4 answers back in 16-byte form at times; an
		// A record is an IPv4 address, so unmap before checking.
		a = a.Unmap()
		if err := CheckAddr(a); err != nil {
			return nil, withHost(err, h.Name)
		}
		out = append(out, a)
	}
	return out, nil
}

func withHost(err error, host string) error {
	var re *RefusedError
	if errors.As(err, &re) && re.Host == "" {
		c := *re
		c.Host = host
		return &c
	}
	return err
}

// DialContext connects to addr ("host:port") for an http.Transport. Hosts
// on the allow-list are dialled as they are; every other host is resolved,
// each address checked, and the connection's own address checked once more
// in the dialer's Control hook, so that a name whose answer changes between
// check and connect (DNS rebinding) still cannot reach a refused address.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	name, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	h := Host{Name: normalName(name), Port: port}
	if a, perr := netip.ParseAddr(h.Name); perr == nil {
		h.Addr = a
	}
	if g.Allowed(h) {
		d := net.Dialer{Timeout: g.timeout}
		return d.DialContext(ctx, network, addr)
	}
	addrs, err := g.resolve(ctx, h)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: g.timeout, Control: controlCheck}
	var firstErr error
	for _, a := range addrs {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if errors.Is(err, ErrRefused) || ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// controlCheck runs after the socket is created and before it connects, on
// the numeric address actually used.
func controlCheck(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Addr: address, Reason: "unparseable dial address"}
	}
	return CheckAddr(ap.Addr())
}

// CheckRedirect returns an http.Client CheckRedirect policy that allows at
// most max redirects and checks every hop's URL with CheckURL.
func (g *Guard) CheckRedirect(max int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > max {
			return fmt.Errorf("%w: stopped after %d redirects", ErrTooManyRedirects, max)
		}
		if err := g.CheckURL(req.Context(), req.URL); err != nil {
			return fmt.Errorf("redirect hop %d: %w", len(via), err)
		}
		return nil
	}
}

// ErrTooManyRedirects is returned when a fetch exceeds its redirect cap.
var ErrTooManyRedirects = errors.New("too many redirects")

// Transport returns an http.Transport whose connections all go through
// DialContext and which ignores proxy environment variables (a proxy would
// connect on the guard's behalf, out of its sight).
func (g *Guard) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           g.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}
