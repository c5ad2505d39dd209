package llm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// h1Transport tuning.
const (
	// defaultH1IdleTimeout is how long an idle connection may be reused.
	// uvicorn, which serves vLLM's and SGLang's HTTP APIs, closes
	// keep-alive connections after 5 s idle by default
	// (--timeout-keep-alive); reusing only connections idle for less than
	// 4 s leaves a second of margin, so a request rarely lands on a
	// connection the server is closing or has closed.
	defaultH1IdleTimeout = 4 * time.Second
	// h1ReadBufferSize and h1WriteBufferSize size the buffers an exchange
	// uses: answers carry every prompt token id (tens of KB for long
	// histories) and requests a whole conversation, so they move in a few
	// syscalls, not dozens. Connections do not own them (see h1Conn).
	h1ReadBufferSize  = 64 << 10
	h1WriteBufferSize = 32 << 10
	// h1MaxHeaderBytes caps the bytes read from the connection until the
	// final response's header has been parsed (1xx responses included),
	// so a broken server cannot grow it without bound. It counts bytes
	// read into the buffer, which may include the start of the body.
	h1MaxHeaderBytes = 1 << 20
)

// h1PastDeadline is a deadline in the past: setting it makes a
// connection's blocked reads and writes return at once.
var h1PastDeadline = time.Unix(1, 0)

var errH1HeaderTooLarge = errors.New("response header too large")

// Buffers are lent to exchanges, not owned by connections: with thousands
// of calls in flight, most of them waiting seconds for the model, 96 KiB
// per connection would be gigabytes.
var (
	h1Readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, h1ReadBufferSize) }}
	h1Writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, h1WriteBufferSize) }}
)

// h1Transport is an http.RoundTripper for plain http:// HTTP/1.1. It
// writes requests with net/http's own request writer ((*http.Request).Write)
// and parses answers with http.ReadResponse, on the caller's goroutine:
// unlike http.Transport it runs no read and write goroutines per
// connection and hands nothing over channels, machinery that cost a model
// call more client CPU than the exchange itself (BenchmarkH1Transport
// compares the two).
//
// Idle connections are kept per host:port on a LIFO stack, so the most
// recently used (warmest) one is reused first, at most maxIdlePerHost per
// host and maxIdle in total (0: no total limit); a connection returned
// beyond those limits is closed. Nothing watches idle connections: one
// idle for longer than idleTimeout is closed when a request finds it
// instead of reused, together with every older one of its host, and
// CloseIdleConnections closes them all.
//
// Because no goroutine reads idle connections, a server's close is only
// seen when the next request uses the connection. When a reused
// connection fails before any byte of the answer was read (EOF, reset or
// broken pipe while writing the request or waiting for the status line),
// the server closed it while idle, and the request is sent once more on a
// new connection if its body can be replayed (no body, or GetBody set).
// This also replays a POST, which http.Transport does not do: a server
// that closed an idle connection never saw the request, and in the rare
// case where it read the request and then died before answering, an
// inference request only costs compute again; it changes no state.
//
// Requests whose URL scheme is not "http", upgrades and CONNECT go to
// fallback, a clone of http.DefaultTransport; so does every request when
// the environment configures a proxy for http:// URLs (HTTP_PROXY), since
// only http.Transport speaks to proxies (NO_PROXY is not consulted for
// that decision). Requests are sent with Content-Length from
// ContentLength and without Accept-Encoding (answers are not compressed).
// The whole request is written before the answer is read, also with
// Expect: 100-continue, whose 100 answer is skipped like every 1xx; a
// server that answers without reading a body larger than the socket
// buffers would stall the write until it closes the connection, which
// inference servers do not do.
//
// It is safe for concurrent use.
type h1Transport struct {
	maxIdlePerHost int
	maxIdle        int
	idleTimeout    time.Duration // <0: idle connections do not expire
	dialer         net.Dialer
	fallback       http.RoundTripper
	// proxied sends every request to fallback.
	proxied bool

	mu    sync.Mutex
	hosts map[string]*h1Host // by host:port
	nIdle int                // idle connections across hosts
}

var _ http.RoundTripper = (*h1Transport)(nil)

// h1Host holds one host's idle connections, oldest first.
type h1Host struct {
	idle []*h1Conn
}

// h1Conn is one connection. Only the goroutine that took it from the idle
// stack uses it until it is put back. It holds a read buffer only from the
// moment its answer starts arriving until it is idle again: the request is
// written through a pooled writer, and waitReadable waits for the answer
// without a buffer.
type h1Conn struct {
	c    net.Conn
	raw  syscall.RawConn // nil if c does not offer one; then no buffer-free wait
	addr string
	br   *bufio.Reader // reads through the h1Conn (for the header limit); nil while idle
	// limit is how many more bytes may be read (see h1MaxHeaderBytes).
	limit  int64
	idleAt time.Time
}

// newH1Transport returns a transport keeping at most maxIdlePerHost idle
// connections per host (0: http.DefaultMaxIdleConnsPerHost) and maxIdle in
// all (0: no limit), reusing them for idleTimeout (0: 4 s, negative: no
// limit). Its fallback, used for https and proxies, is a clone of
// http.DefaultTransport with the same limits, 90 s idle time and the same
// buffer sizes.
func newH1Transport(maxIdle, maxIdlePerHost int, idleTimeout time.Duration) *h1Transport {
	if maxIdlePerHost <= 0 {
		maxIdlePerHost = http.DefaultMaxIdleConnsPerHost
	}
	if idleTimeout == 0 {
		idleTimeout = defaultH1IdleTimeout
	}
	fb := http.DefaultTransport.(*http.Transport).Clone()
	fb.MaxIdleConns, fb.MaxIdleConnsPerHost = maxIdle, maxIdlePerHost
	fb.IdleConnTimeout = 90 * time.Second
	fb.ReadBufferSize, fb.WriteBufferSize = h1ReadBufferSize, h1WriteBufferSize
	return &h1Transport{
		maxIdlePerHost: maxIdlePerHost,
		maxIdle:        max(maxIdle, 0),
		idleTimeout:    idleTimeout,
		// As http.DefaultTransport's dialer.
		dialer:   net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		fallback: fb,
		proxied:  proxiesHTTP(fb.Proxy),
		hosts:    make(map[string]*h1Host),
	}
}

// proxiesHTTP reports whether proxy sends plain http:// requests to a
// non-local host through a proxy. A proxy configuration error counts as
// a proxy, so the fallback reports it.
func proxiesHTTP(proxy func(*http.Request) (*url.URL, error)) bool {
	if proxy == nil {
		return false
	}
	u, err := proxy(&http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "http", Host: "inference.invalid"}, Header: http.Header{}})
	return err != nil || u != nil
}

// RoundTrip sends req on an idle or new connection and returns the
// answer, whose body gives the connection back for reuse once read to EOF
// (or closed after that). It always closes req.Body. Errors caused by the
// cancellation of req's context wrap the context's error.
func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.proxied || req.URL == nil || req.URL.Scheme != "http" || req.Method == http.MethodConnect || len(req.Header["Upgrade"]) > 0 {
		return t.fallback.RoundTrip(req)
	}
	if req.URL.Host == "" {
		closeRequestBody(req)
		return nil, errors.New("http: no Host in request URL")
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		closeRequestBody(req)
		return nil, err
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	r := req
	for retried := false; ; retried = true {
		pc, reused, err := t.conn(ctx, addr, retried)
		if err != nil {
			closeRequestBody(r)
			return nil, err
		}
		resp, stale, err := t.exchange(ctx, pc, r)
		if err == nil {
			resp.Request = req
			return resp, nil
		}
		if !stale || !reused || retried {
			return nil, err
		}
		// The connection was closed while idle; so were the ones idle
		// for longer.
		t.dropIdle(addr, pc.idleAt)
		if r = replayable(req); r == nil {
			return nil, err
		}
	}
}

// replayable returns a request to send req again, or nil if its body
// cannot be read again. req itself is not modified.
func replayable(req *http.Request) *http.Request {
	if req.Body == nil || req.Body == http.NoBody {
		return req
	}
	if req.GetBody == nil {
		return nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil
	}
	r := *req
	r.Body = body
	return &r
}

func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// exchange writes req on pc and reads the answer's header. On error pc
// is closed, and stale reports whether the failure came before any byte
// of the answer in a way a connection closed by the server produces.
func (t *h1Transport) exchange(ctx context.Context, pc *h1Conn, req *http.Request) (resp *http.Response, stale bool, err error) {
	// A cancelled context sets a past deadline, so the blocked write or
	// read returns at once; the connection is then never reused.
	stop := context.AfterFunc(ctx, pc.interrupt)
	fail := func(op string, err error, beforeAnswer bool) (*http.Response, bool, error) {
		stop()
		pc.close()
		if cerr := ctx.Err(); cerr != nil {
			return nil, false, fmt.Errorf("%s: %w", op, cerr)
		}
		return nil, beforeAnswer && isStaleConnErr(err), fmt.Errorf("%s: %w", op, err)
	}
	bw := h1Writers.Get().(*bufio.Writer)
	bw.Reset(pc.c)
	err = req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	h1Writers.Put(bw)
	if err != nil {
		return fail("write request", err, true)
	}
	if err := pc.waitReadable(); err != nil {
		return fail("read response", err, true)
	}
	if pc.br == nil {
		pc.br = h1Readers.Get().(*bufio.Reader)
		pc.br.Reset(pc)
	}
	pc.limit = h1MaxHeaderBytes
	if _, err := pc.br.Peek(1); err != nil {
		return fail("read response", err, true)
	}
	for {
		resp, err = http.ReadResponse(pc.br, req)
		if err != nil {
			return fail("read response", err, false)
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return fail("read response", errors.New("unexpected 101 Switching Protocols"), false)
		}
		// 1xx answers (100 Continue, 103 Early Hints) have no body and
		// precede the final answer.
		if resp.StatusCode < 100 || resp.StatusCode > 199 {
			break
		}
	}
	pc.limit = 1<<63 - 1
	keep := !resp.Close && !wantsClose(req)
	if resp.Body == http.NoBody {
		t.release(pc, stop, keep)
		return resp, false, nil
	}
	resp.Body = &h1Body{rc: resp.Body, ctx: ctx, t: t, pc: pc, stop: stop, keep: keep}
	return resp, false, nil
}

// isStaleConnErr reports whether err is what writing to or reading from a
// connection the server has closed returns.
func isStaleConnErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED)
}

// wantsClose reports whether req asks to close the connection after it.
func wantsClose(req *http.Request) bool {
	if req.Close {
		return true
	}
	for _, v := range req.Header["Connection"] {
		for tok := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "close") {
				return true
			}
		}
	}
	return false
}

// conn returns an idle connection to addr, reused reporting so, or dials
// a new one; fresh always dials.
func (t *h1Transport) conn(ctx context.Context, addr string, fresh bool) (pc *h1Conn, reused bool, err error) {
	now := time.Now()
	var expired []*h1Conn
	t.mu.Lock()
	if h := t.hosts[addr]; h != nil && len(h.idle) > 0 && !fresh {
		n := len(h.idle)
		if pc := h.idle[n-1]; !t.expired(pc, now) {
			h.idle[n-1] = nil
			h.idle = h.idle[:n-1]
			t.nIdle--
			t.mu.Unlock()
			return pc, true, nil
		}
		// The newest idle connection has expired, so have the older ones.
		expired = append(expired, h.idle...)
		clear(h.idle)
		h.idle = h.idle[:0]
		t.nIdle -= n
	}
	t.mu.Unlock()
	for _, c := range expired {
		c.close()
	}
	c, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, false, fmt.Errorf("dial %s: %w", addr, cerr)
		}
		return nil, false, err
	}
	pc = &h1Conn{c: c, addr: addr}
	if sc, ok := c.(syscall.Conn); ok {
		pc.raw, _ = sc.SyscallConn()
	}
	return pc, false, nil
}

func (t *h1Transport) expired(pc *h1Conn, now time.Time) bool {
	return t.idleTimeout > 0 && now.Sub(pc.idleAt) > t.idleTimeout
}

// release gives pc back for reuse if keep holds and the context's
// interrupt was stopped before it ran, and closes it otherwise.
func (t *h1Transport) release(pc *h1Conn, stop func() bool, keep bool) {
	if keep && stop() {
		t.putIdle(pc)
		return
	}
	stop()
	pc.close()
}

// putIdle pushes pc on its host's idle stack, or closes it beyond the
// limits or when the server sent bytes nobody asked for. It also closes
// the host's expired idle connections.
func (t *h1Transport) putIdle(pc *h1Conn) {
	if pc.br != nil {
		if pc.br.Buffered() > 0 {
			pc.close()
			return
		}
		// Nothing reads an idle connection, so its buffer can serve
		// another exchange. (A closed connection keeps its buffer: a Read
		// may still be using it when Close aborts the body.)
		pc.br.Reset(nil)
		h1Readers.Put(pc.br)
		pc.br = nil
	}
	now := time.Now()
	pc.idleAt = now
	var drop []*h1Conn
	t.mu.Lock()
	h := t.hosts[pc.addr]
	if h == nil {
		h = &h1Host{}
		t.hosts[pc.addr] = h
	}
	if t.idleTimeout > 0 && len(h.idle) > 0 && t.expired(h.idle[0], now) {
		drop = t.dropOlderLocked(h, now.Add(-t.idleTimeout), drop)
	}
	if len(h.idle) >= t.maxIdlePerHost || (t.maxIdle > 0 && t.nIdle >= t.maxIdle) {
		drop = append(drop, pc)
	} else {
		h.idle = append(h.idle, pc)
		t.nIdle++
	}
	t.mu.Unlock()
	for _, c := range drop {
		c.close()
	}
}

// dropIdle closes addr's idle connections that went idle no later than
// cutoff.
func (t *h1Transport) dropIdle(addr string, cutoff time.Time) {
	var drop []*h1Conn
	t.mu.Lock()
	if h := t.hosts[addr]; h != nil {
		drop = t.dropOlderLocked(h, cutoff, nil)
	}
	t.mu.Unlock()
	for _, c := range drop {
		c.close()
	}
}

// dropOlderLocked removes h's idle connections that went idle no later
// than cutoff and appends them to drop. t.mu must be held.
func (t *h1Transport) dropOlderLocked(h *h1Host, cutoff time.Time, drop []*h1Conn) []*h1Conn {
	n := 0
	for n < len(h.idle) && !h.idle[n].idleAt.After(cutoff) {
		n++
	}
	if n == 0 {
		return drop
	}
	drop = append(drop, h.idle[:n]...)
	m := copy(h.idle, h.idle[n:])
	clear(h.idle[m:])
	h.idle = h.idle[:m]
	t.nIdle -= n
	return drop
}

// CloseIdleConnections closes every idle connection, and the fallback's.
// Connections in use are not interrupted; they become idle when their
// answers have been read. It is idempotent.
func (t *h1Transport) CloseIdleConnections() {
	var drop []*h1Conn
	t.mu.Lock()
	for _, h := range t.hosts {
		drop = append(drop, h.idle...)
		clear(h.idle)
		h.idle = h.idle[:0]
	}
	t.nIdle = 0
	t.mu.Unlock()
	for _, c := range drop {
		c.close()
	}
	if ci, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// Read reads from the connection within the header limit; pc.br reads
// through it.
func (pc *h1Conn) Read(p []byte) (int, error) {
	if pc.limit <= 0 {
		return 0, errH1HeaderTooLarge
	}
	if int64(len(p)) > pc.limit {
		p = p[:pc.limit]
	}
	n, err := pc.c.Read(p)
	pc.limit -= int64(n)
	return n, err
}

// interrupt makes pc's blocked reads and writes return.
func (pc *h1Conn) interrupt() { pc.c.SetDeadline(h1PastDeadline) }

func (pc *h1Conn) close() { pc.c.Close() }

// h1Body is an answer's body. Read to EOF, it gives the connection back
// to the transport (if neither side asked to close it and the context was
// not cancelled); closed earlier, it closes the connection instead of
// reading the rest. Close may be called concurrently with Read, to abort
// it.
type h1Body struct {
	rc   io.ReadCloser // http.ReadResponse's body; never closed, see Close
	ctx  context.Context
	t    *h1Transport
	stop func() bool
	keep bool

	mu     sync.Mutex
	pc     *h1Conn // nil once given back or closed
	closed bool
	err    error // io.EOF or the first read error, returned from then on
}

// Read reads the body. Once the context is cancelled its error wraps the
// context's error; after Close it returns http.ErrBodyReadAfterClose.
func (b *h1Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return 0, http.ErrBodyReadAfterClose
	}
	if err := b.err; err != nil {
		b.mu.Unlock()
		return 0, err
	}
	b.mu.Unlock()
	n, err := b.rc.Read(p)
	if err == nil {
		return n, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != io.EOF {
		if cerr := b.ctx.Err(); cerr != nil {
			err = fmt.Errorf("read response body: %w", cerr)
		}
	}
	if b.err == nil {
		b.err = err
	}
	b.releaseLocked(err == io.EOF)
	return n, err
}

// Close closes the body; a connection whose body was not read to the end
// is closed rather than drained. It is idempotent and returns nil.
func (b *h1Body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	// b.rc is not closed: ReadResponse's body would read the rest of the
	// body to EOF.
	b.releaseLocked(false)
	return nil
}

// releaseLocked gives the connection back (whole: the body was read to
// EOF) or closes it, once. b.mu must be held.
func (b *h1Body) releaseLocked(whole bool) {
	pc := b.pc
	if pc == nil {
		return
	}
	b.pc = nil
	b.t.release(pc, b.stop, whole && b.keep)
}
