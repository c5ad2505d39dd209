package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mgrpo/mgrpo/internal/failure"
)

// recorderEnv, when set, makes the test binary the stdio MCP server of
// TestCallTimeoutSendsCancellation instead of running the tests; its value
// is the file the server appends the messages it receives to.
const recorderEnv = "MGRPO_TEST_MCP_RECORDER"

func TestMain(m *testing.M) {
	if path := os.Getenv(recorderEnv); path != "" {
		os.Exit(runStdioRecorder(path))
	}
	os.Exit(m.Run())
}

// received is one JSON-RPC request or notification a server received: its
// method, its id (calls) and, for notifications/cancelled, the id of the
// request it cancels (ids as JSON text, so 3 and "3" stay apart).
type received struct {
	Method    string `json:"method"`
	ID        string `json:"id,omitempty"`
	Cancelled string `json:"cancelled,omitempty"`
	// HandlerEnded is set on the record the slow tool's handler adds
	// when its context ends, with the context's error.
	HandlerEnded string `json:"handler_ended,omitempty"`
}

func record(req *jsonrpc.Request) received {
	r := received{Method: req.Method}
	if req.IsCall() {
		b, _ := json.Marshal(req.ID.Raw())
		r.ID = string(b)
	}
	if req.Method == "notifications/cancelled" {
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		_ = json.Unmarshal(req.Params, &p)
		r.Cancelled = compact(p.RequestID)
	}
	return r
}

func compact(b []byte) string {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return string(b)
	}
	return out.String()
}

// recorderServer is an MCP server built with the SDK whose one tool,
// "wait", blocks until its context ends and reports that end through
// onEnd.
func recorderServer(onEnd func(error)) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "recorder", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "wait", Description: "Blocks until cancelled."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			<-ctx.Done()
			onEnd(ctx.Err())
			return nil, nil, ctx.Err()
		})
	return srv
}

// runStdioRecorder serves recorderServer over stdio, appending every
// message received (and the handler's end) to path as JSON lines.
func runStdioRecorder(path string) int {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	var mu sync.Mutex
	write := func(r received) {
		mu.Lock()
		defer mu.Unlock()
		b, _ := json.Marshal(r)
		_, _ = f.Write(append(b, '\n'))
	}
	srv := recorderServer(func(err error) { write(received{HandlerEnded: err.Error()}) })
	if err := srv.Run(context.Background(), recordingTransport{&sdk.StdioTransport{}, write}); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return 0
}

// recordingTransport records the requests and notifications its
// connection reads.
type recordingTransport struct {
	sdk.Transport
	write func(received)
}

func (t recordingTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return recordingConn{c, t.write}, nil
}

type recordingConn struct {
	sdk.Connection
	write func(received)
}

func (c recordingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil {
		c.write(record(req))
	}
	return msg, err
}

// recvLog is what a recorder server received, safe for concurrent use.
type recvLog struct {
	mu  sync.Mutex
	all []received
}

func (l *recvLog) add(r received) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, r)
}

func (l *recvLog) snapshot() []received {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]received(nil), l.all...)
}

// httpRecorder serves recorderServer over Streamable HTTP on a port of
// the test's range, recording every JSON-RPC message posted to it.
func httpRecorder(t *testing.T) (ServerConfig, func() []received) {
	t.Helper()
	var l recvLog
	srv := recorderServer(func(err error) { l.add(received{HandlerEnded: err.Error()}) })
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if msg, err := jsonrpc.DecodeMessage(body); err == nil {
				if req, ok := msg.(*jsonrpc.Request); ok {
					l.add(record(req))
				}
			}
		}
		h.ServeHTTP(w, r)
	})}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return ServerConfig{Name: "rec", URL: "http://" + ln.Addr().String() + "/mcp"}, l.snapshot
}

// stdioRecorder configures the test binary as a stdio recorder server.
func stdioRecorder(t *testing.T) (ServerConfig, func() []received) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "received.jsonl")
	read := func() []received {
		b, _ := os.ReadFile(path)
		var out []received
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r received
			if json.Unmarshal([]byte(line), &r) == nil {
				out = append(out, r)
			}
		}
		return out
	}
	return ServerConfig{Name: "rec", Command: exe, Env: []string{recorderEnv + "=" + path}}, read
}

// TestCallTimeoutSendsCancellation checks, on the server's side of the
// wire, that a call past its timeout is cancelled the MCP way: the server
// receives notifications/cancelled naming the id of the tools/call it
// received, and the SDK server ends the handler's context.
func TestCallTimeoutSendsCancellation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server func(*testing.T) (ServerConfig, func() []received)
	}{{"stdio", stdioRecorder}, {"streamable-http", httpRecorder}} {
		t.Run(tc.name, func(t *testing.T) {
			sc, got := tc.server(t)
			sc.PerTool = map[string]ToolPolicy{"wait": {Timeout: 300 * time.Millisecond}}
			s := openSet(t, Config{Servers: []ServerConfig{sc}})
			reg := registry(t, s)
			obs := reg.Call(context.Background(), "wait", json.RawMessage(`{}`))
			if obs.Meta.Class != failure.ClassTimeout {
				t.Fatalf("wait = %q (%s %s), want timeout", obs.Text, obs.Meta.Class, obs.Meta.Error)
			}
			// The notification is sent after the call returns: wait for it
			// (the bound only keeps a broken build from hanging).
			var callID, cancelled, ended string
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) && (cancelled == "" || ended == "") {
				time.Sleep(20 * time.Millisecond)
				callID, cancelled, ended = "", "", ""
				for _, r := range got() {
					switch {
					case r.Method == "tools/call":
						callID = r.ID
					case r.Method == "notifications/cancelled":
						cancelled = r.Cancelled
					case r.HandlerEnded != "":
						ended = r.HandlerEnded
					}
				}
			}
			if callID == "" {
				t.Fatalf("the server received no tools/call: %+v", got())
			}
			if cancelled != callID {
				t.Errorf("notifications/cancelled for request %q, want the tools/call's id %s; received %+v", cancelled, callID, got())
			}
			if ended != context.Canceled.Error() {
				t.Errorf("the handler's context ended with %q, want %q", ended, context.Canceled)
			}
		})
	}
}
