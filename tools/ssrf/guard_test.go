package ssrf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"
)

// fakeResolver maps names to addresses; unknown names do not resolve.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func mustGuard(tb testing.TB, cfg Config) *Guard {
	tb.Helper()
	g, err := New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return g
}

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

func TestCheckURLRefused(t *testing.T) {
	res := fakeResolver{
		"internal.example":  addrs("10.1.2.3"),
		"metadata.example":  addrs("169.254.169.254"),
		"mixed.example":     addrs("93.184.216.34", "192.168.1.1"),
		"rebind.example":    addrs("127.0.0.1"),
		"v6private.example": addrs("fd00::1"),
		"localhost":         addrs("127.0.0.1", "::1"),
	}
	g := mustGuard(t, Config{Resolver: res})
	cases := []string{
		"http://127.0.0.1/",
		"http://127.1.2.3:8080/admin",
		"http://localhost/",
		"http://LOCALHOST./",
		"http://[::1]/",
		"http://10.0.0.1/",
		"http://10.255.255.255/",
		"http://172.16.0.1/",
		"http://172.31.255.254/",
		"http://192.168.0.1/",
		"http://[fc00::1]/",
		"http://[fdff:ffff::1]/",
		"http://169.254.0.1/",
		"http://169.254.169.254/latest/meta-data/",
		"http://[fe80::1]/",
		"http://[fe80::1%25eth0]/",
		"http://100.64.0.1/",
		"http://100.127.255.254/",
		"http://224.0.0.1/",
		"http://239.255.255.250/",
		"http://[ff02::1]/",
		"http://0.0.0.0/",
		"http://[::]/",
		"http://255.255.255.255/",
		"http://[::ffff:127.0.0.1]/",
		"http://[::ffff:7f00:1]/",
		"http://[::ffff:8.8.8.8]/",
		"http://[::127.0.0.1]/",
		"http://2130706433/",
		"http://0x7f.1/",
		"http://0x7f000001/",
		"http://017700000001/",
		"http://0177.0.0.1/",
		"http://127.1/",
		"http://127.0.0.1.:80/",
		"ftp://example.com/",
		"file:///etc/passwd",
		"gopher://example.com/",
		"javascript:alert(1)",
		"data:text/html,hi",
		"http://user:pass@example.com/",
		"http:///nohost",
		"http://internal.example/",
		"http://metadata.example/",
		"http://mixed.example/",
		"http://rebind.example/",
		"http://v6private.example/",
	}
	for _, raw := range cases {
		t.Run(raw, func(t *testing.T) {
			u, err := url.Parse(raw)
			if err != nil {
				return // refused before it reaches the guard
			}
			err = g.CheckURL(context.Background(), u)
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("CheckURL(%s) = %v, want ErrRefused", raw, err)
			}
		})
	}
}

func TestCheckURLAllowedPublic(t *testing.T) {
	g := mustGuard(t, Config{Resolver: fakeResolver{"example.com": addrs("93.184.216.34", "2606:2800:220:1::1")}})
	for _, raw := range []string{"http://example.com/", "https://EXAMPLE.com:8443/x", "http://93.184.216.34/", "http://[2606:2800:220:1::1]/"} {
		u, _ := url.Parse(raw)
		if err := g.CheckURL(context.Background(), u); err != nil {
			t.Errorf("CheckURL(%s) = %v, want nil", raw, err)
		}
	}
	u, _ := url.Parse("http://nowhere.invalid/")
	if err := g.CheckURL(context.Background(), u); err == nil || errors.Is(err, ErrRefused) {
		t.Errorf("unresolvable host: got %v, want a resolve error", err)
	}
}

func TestAllowListOpensExactlyWhatItNames(t *testing.T) {
	g := mustGuard(t, Config{
		Allow:    []string{"127.0.0.1:8080", "corpus.local", "[::1]:9000"},
		Resolver: fakeResolver{"corpus.local": addrs("10.0.0.5"), "sub.corpus.local": addrs("10.0.0.6")},
	})
	cases := []struct {
		url  string
		want bool
	}{
		{"http://127.0.0.1:8080/x", true},
		{"http://127.0.0.1:8081/x", false},
		{"http://127.0.0.1/", false},
		{"http://localhost:8080/", false},
		{"http://corpus.local/", true},
		{"http://corpus.local:9999/", true},
		{"https://CORPUS.local/", true},
		{"http://sub.corpus.local/", false},
		{"http://[::1]:9000/", true},
		{"http://[::1]:9001/", false},
		{"http://2130706433:8080/", false},
		{"ftp://127.0.0.1:8080/", false},
	}
	for _, c := range cases {
		u, _ := url.Parse(c.url)
		err := g.CheckURL(context.Background(), u)
		if got := err == nil; got != c.want {
			t.Errorf("CheckURL(%s) allowed = %v (%v), want %v", c.url, got, err, c.want)
		}
	}
	if _, err := New(Config{Allow: []string{"http://x/"}}); err == nil {
		t.Error("New with a URL as allow entry: want error")
	}
}

func TestControlCheckRefusesConnectedAddress(t *testing.T) {
	for _, a := range []string{"127.0.0.1:80", "[::1]:443", "10.0.0.1:80", "169.254.169.254:80", "[::ffff:127.0.0.1]:80"} {
		if err := controlCheck("tcp", a, nil); !errors.Is(err, ErrRefused) {
			t.Errorf("controlCheck(%s) = %v, want ErrRefused", a, err)
		}
	}
	if err := controlCheck("tcp", "93.184.216.34:80", nil); err != nil {
		t.Errorf("controlCheck(public) = %v", err)
	}
}

func client(g *Guard, maxRedirects int) *http.Client {
	return &http.Client{Transport: g.Transport(), CheckRedirect: g.CheckRedirect(maxRedirects)}
}

func TestDialRefusesHostResolvingToPrivate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "secret") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	g := mustGuard(t, Config{Resolver: fakeResolver{"innocent.example": addrs("127.0.0.1")}})
	resp, err := client(g, 5).Get("http://innocent.example:" + port + "/")
	if err == nil {
		resp.Body.Close()
		t.Fatal("fetch through a name resolving to 127.0.0.1 succeeded")
	}
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v, want ErrRefused", err)
	}
	// The dialer itself refuses, independent of CheckURL.
	if _, err := g.DialContext(context.Background(), "tcp", "innocent.example:"+port); !errors.Is(err, ErrRefused) {
		t.Fatalf("DialContext = %v, want ErrRefused", err)
	}
}

func TestRedirectFromAllowedHostToLoopbackRefused(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "internal") }))
	defer target.Close()
	hops := 0
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-loopback":
			http.Redirect(w, r, target.URL+"/admin", http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/loop":
			hops++
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			fmt.Fprint(w, "ok")
		}
	}))
	defer allowed.Close()
	g := mustGuard(t, Config{Allow: []string{allowed.Listener.Addr().String()}})
	c := client(g, 3)

	resp, err := c.Get(allowed.URL + "/ok")
	if err != nil {
		t.Fatalf("allowed host: %v", err)
	}
	resp.Body.Close()
	for _, p := range []string{"/to-loopback", "/to-metadata"} {
		resp, err := c.Get(allowed.URL + p)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s: redirect to a refused host was followed", p)
		}
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("%s: err = %v, want ErrRefused", p, err)
		}
	}
	resp, err = c.Get(allowed.URL + "/loop")
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, ErrTooManyRedirects) {
		t.Fatalf("redirect loop: err = %v, want ErrTooManyRedirects", err)
	}
	if hops != 4 {
		t.Errorf("redirect loop: server saw %d hops, want 4 (1 + 3 redirects)", hops)
	}
}
