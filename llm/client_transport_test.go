package llm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// TestDefaultTransportSettings checks the limits and options of the
// transport New uses without an HTTPClient.
func TestDefaultTransportSettings(t *testing.T) {
	pc := PoolConfig{MaxInFlightPerEndpoint: 8}.withDefaults(3)
	tr, ok := defaultHTTPClient(pc).Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport %T, want *http.Transport", defaultHTTPClient(pc).Transport)
	}
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"MaxIdleConnsPerHost", tr.MaxIdleConnsPerHost, 8},
		{"MaxIdleConns", tr.MaxIdleConns, 24},
		{"MaxConnsPerHost", tr.MaxConnsPerHost, 0},
		{"IdleConnTimeout", tr.IdleConnTimeout, idleConnTimeout},
		{"ForceAttemptHTTP2", tr.ForceAttemptHTTP2, true},
		{"ReadBufferSize (net/http's default)", tr.ReadBufferSize, 0},
		{"WriteBufferSize", tr.WriteBufferSize, writeBufferSize},
		{"Proxy is ProxyFromEnvironment", reflect.ValueOf(tr.Proxy).Pointer(), reflect.ValueOf(http.ProxyFromEnvironment).Pointer()},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	for _, tc := range []struct {
		inFlight int64
		want     int
	}{
		{0, writeBufferSize},
		{24, writeBufferSize},
		{1024, writeBufferSize},
		{2048, 16 << 10},
		{8000, writeBufferBudget / 8000},
		{20000, minWriteBufferSize},
		{1 << 41, minWriteBufferSize},
	} {
		if got := defaultTransport(PoolConfig{MaxInFlightPerEndpoint: 1, MaxInFlight: tc.inFlight}).WriteBufferSize; got != tc.want {
			t.Errorf("WriteBufferSize at %d calls in flight = %d, want %d", tc.inFlight, got, tc.want)
		}
	}
	huge := defaultTransport(PoolConfig{MaxInFlightPerEndpoint: 1 << 40, MaxInFlight: 1 << 41})
	if huge.MaxIdleConnsPerHost != maxIdleConns || huge.MaxIdleConns != maxIdleConns {
		t.Errorf("idle limits for huge caps: per host %d, total %d; want %d", huge.MaxIdleConnsPerHost, huge.MaxIdleConns, maxIdleConns)
	}
}

// countingServer is a loopback server answering every request with a
// canned vLLM answer, counting the connections it accepts and the
// requests that carried an Idempotency-Key header on the wire.
type countingServer struct {
	ts            *httptest.Server
	conns         atomic.Int64
	requests      atomic.Int64
	keyOnTheWire  atomic.Int64
	protoMajor    atomic.Int64
	answerForBody []byte
}

func newCountingServer(tb testing.TB, tlsHTTP2 bool) *countingServer {
	tb.Helper()
	s := &countingServer{answerForBody: cannedVLLM(1 << 10)}
	s.ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.protoMajor.Store(int64(r.ProtoMajor))
		if _, ok := r.Header["Idempotency-Key"]; ok {
			s.keyOnTheWire.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.answerForBody)
	}))
	s.ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	if tlsHTTP2 {
		s.ts.EnableHTTP2 = true
		s.ts.StartTLS()
	} else {
		s.ts.Start()
	}
	tb.Cleanup(s.ts.Close)
	return s
}

func chatOnce(ctx context.Context, c *Client) error {
	_, err := c.Chat(ctx, Request{Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}})
	return err
}

// TestDefaultTransportReusesConnections checks that concurrent calls keep
// reusing the connections of the calls in flight: 16 goroutines making 10
// calls each through a pool that lets 4 be in flight open about 4
// connections, not 160, and later calls one after another open none.
func TestDefaultTransportReusesConnections(t *testing.T) {
	s := newCountingServer(t, false)
	const inFlight, goroutines, perGoroutine = 4, 16, 10
	c := mustClient(t, Config{Dialect: DialectVLLM, Endpoints: []string{s.ts.URL}, CaptureTokens: true,
		Pool: PoolConfig{MaxInFlightPerEndpoint: inFlight}})
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*perGoroutine)
	for range goroutines {
		wg.Go(func() {
			for range perGoroutine {
				if err := chatOnce(context.Background(), c); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	opened := s.conns.Load()
	t.Logf("%d calls, %d in flight at most: %d connections", goroutines*perGoroutine, inFlight, opened)
	// A call waiting for a connection dials one and takes whichever is
	// ready first, an idle one or the new one, so a few more than the
	// calls in flight may be opened; never one per call.
	if opened > 2*inFlight {
		t.Errorf("server saw %d connections for %d calls with %d in flight, want at most %d", opened, goroutines*perGoroutine, inFlight, 2*inFlight)
	}
	for range 20 {
		if err := chatOnce(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.conns.Load(); got != opened {
		t.Errorf("20 calls one after another opened %d connections, want 0 (idle ones reused)", got-opened)
	}
	if n := s.keyOnTheWire.Load(); n != 0 {
		t.Errorf("%d of %d requests sent an Idempotency-Key header; the nil marker must stay local", n, s.requests.Load())
	}
}

// TestDefaultTransportMarksRequestsReplayable checks that each attempt
// reaches the transport marked idempotent, which lets net/http send it
// again on a new connection when a reused one was closed by the server.
func TestDefaultTransportMarksRequestsReplayable(t *testing.T) {
	body := cannedVLLM(1 << 10)
	var marked, seen atomic.Int64
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen.Add(1)
		if v, ok := r.Header["Idempotency-Key"]; ok && v == nil {
			marked.Add(1)
		}
		return cannedTransport{body: body}.RoundTrip(r)
	})
	c := mustClient(t, Config{Dialect: DialectVLLM, Endpoints: []string{"http://inference.test"}, CaptureTokens: true,
		HTTPClient: &http.Client{Transport: rt}})
	if err := chatOnce(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if seen.Load() == 0 || marked.Load() != seen.Load() {
		t.Errorf("%d of %d requests marked with a nil Idempotency-Key", marked.Load(), seen.Load())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestDefaultTransportHTTP2 checks that the default transport speaks
// HTTP/2 to an https endpoint that offers it (the test only adds the test
// server's certificate to the trusted roots).
func TestDefaultTransportHTTP2(t *testing.T) {
	s := newCountingServer(t, true)
	pc := PoolConfig{}.withDefaults(1)
	hc := defaultHTTPClient(pc)
	roots := x509.NewCertPool()
	roots.AddCert(s.ts.Certificate())
	hc.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: roots}
	c := mustClient(t, Config{Dialect: DialectVLLM, Endpoints: []string{s.ts.URL}, CaptureTokens: true, HTTPClient: hc})
	for range 3 {
		if err := chatOnce(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.protoMajor.Load(); got != 2 {
		t.Errorf("requests arrived over HTTP/%d, want HTTP/2", got)
	}
	if got := s.conns.Load(); got != 1 {
		t.Errorf("server saw %d connections, want 1 (HTTP/2 multiplexes)", got)
	}
	if n := s.keyOnTheWire.Load(); n != 0 {
		t.Errorf("%d requests sent an Idempotency-Key header over HTTP/2", n)
	}
}

// proxyChildEnv marks the child process of TestDefaultTransportProxy.
const proxyChildEnv = "MGRPO_LLM_PROXY_CHILD"

// proxiedHost and directHost are names that resolve nowhere: a request to
// proxiedHost can only succeed through the proxy, and directHost is in
// NO_PROXY.
const (
	proxiedHost = "inference.test"
	directHost  = "direct.test"
	httpsProxy  = "http://https-proxy.test:3128"
)

// TestDefaultTransportProxy checks that the default transport honours
// HTTP_PROXY, HTTPS_PROXY and NO_PROXY: a client whose endpoint is a name
// that resolves nowhere gets its answer from a loopback proxy. net/http
// reads the proxy variables once per process, so the client runs in a
// child process (this test binary) started with them set.
func TestDefaultTransportProxy(t *testing.T) {
	var mu sync.Mutex
	var targets []string
	body := cannedVLLM(1 << 10)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		targets = append(targets, r.RequestURI)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(proxy.Close)
	cmd := exec.Command(os.Args[0], "-test.run=^TestDefaultTransportProxyChild$", "-test.count=1", "-test.v")
	for _, kv := range os.Environ() {
		// The child's proxy settings are exactly the test's.
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(name) {
		case "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "REQUEST_METHOD":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, proxyChildEnv+"=1", "HTTP_PROXY="+proxy.URL, "HTTPS_PROXY="+httpsProxy, "NO_PROXY="+directHost)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestDefaultTransportProxyChild") {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(targets) == 0 {
		t.Fatal("no request reached the proxy")
	}
	for _, target := range targets {
		u, err := url.Parse(target)
		if err != nil || u.Host != proxiedHost {
			t.Errorf("proxy got request for %q, want an absolute http://%s/… target", target, proxiedHost)
		}
	}
}

// TestDefaultTransportProxyChild is not a test on its own: run by
// TestDefaultTransportProxy with the proxy variables set, it makes a call
// to an endpoint only the proxy can answer, through the default transport
// (its dialer restricted to loopback), and checks which URLs the transport
// would proxy.
func TestDefaultTransportProxyChild(t *testing.T) {
	if os.Getenv(proxyChildEnv) == "" {
		t.Skip("only runs as TestDefaultTransportProxy's child process")
	}
	pc := PoolConfig{}.withDefaults(1)
	hc := defaultHTTPClient(pc)
	// Only loopback addresses are dialled (the proxy's), so a transport
	// that ignored the proxy fails at once instead of looking the names
	// up.
	tr := hc.Transport.(*http.Transport)
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("test dials loopback addresses only, not %s", addr)
		}
		return dial(ctx, network, addr)
	}
	c := mustClient(t, Config{Dialect: DialectVLLM, Endpoints: []string{"http://" + proxiedHost}, CaptureTokens: true, HTTPClient: hc})
	if err := chatOnce(context.Background(), c); err != nil {
		t.Fatalf("call through the proxy: %v", err)
	}
	for _, tc := range []struct{ target, want string }{
		{"http://" + proxiedHost + "/v1/chat/completions", os.Getenv("HTTP_PROXY")},
		{"https://" + proxiedHost + "/v1/chat/completions", httpsProxy},
		{"http://" + directHost + "/v1/chat/completions", ""},
	} {
		req, _ := http.NewRequest(http.MethodPost, tc.target, nil)
		u, err := tr.Proxy(req)
		got := ""
		if u != nil {
			got = u.String()
		}
		if err != nil || got != tc.want {
			t.Errorf("proxy for %s = %q (%v), want %q", tc.target, got, err, tc.want)
		}
	}
}
