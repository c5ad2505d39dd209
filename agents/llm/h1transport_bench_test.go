package llm

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/internal/benchproc"
)

// h1BenchServerEnv makes TestH1BenchServer serve BenchmarkH1Transport's
// answers in a child process, so the benchmark's process CPU is the
// client's alone.
const h1BenchServerEnv = "MGRPO_H1_BENCH_SERVER"

// h1BenchAnswer is an answer of the size a token-capturing call gets.
var h1BenchAnswer = bytes.Repeat([]byte("1234,"), 5000) // 25 KB

// TestH1BenchServer is not a test: run by BenchmarkH1Transport with
// h1BenchServerEnv set, it prints its address and serves until its stdin
// closes.
func TestH1BenchServer(t *testing.T) {
	if os.Getenv(h1BenchServerEnv) == "" {
		t.Skip("helper process of BenchmarkH1Transport")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	os.Stdout.WriteString(ln.Addr().String() + "\n")
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(h1BenchAnswer)
	}))
}

// startH1BenchServer runs TestH1BenchServer in a child process and returns
// its base URL.
func startH1BenchServer(b *testing.B) string {
	b.Helper()
	addr, _ := benchproc.Start(b, "TestH1BenchServer", []string{h1BenchServerEnv + "=1"}, "")
	return "http://" + strings.TrimSpace(addr)
}

// BenchmarkH1Transport compares the client CPU of one call (an 8 KB POST
// answered with 25 KB) through http.Client over http.Transport, set up as
// defaultHTTPClient set it up before h1Transport, and over h1Transport;
// par is RunParallel's parallelism (goroutines per GOMAXPROCS). The server
// runs in a child process, so cpu-µs/op, this process's CPU (user plus
// system, see processCPU) per request, is the client's alone.
func BenchmarkH1Transport(b *testing.B) {
	base := startH1BenchServer(b)
	reqBody := bytes.Repeat([]byte("a"), 8000)
	transports := []struct {
		name string
		new  func() http.RoundTripper
	}{
		{"std", func() http.RoundTripper {
			t := http.DefaultTransport.(*http.Transport).Clone()
			t.MaxIdleConns, t.MaxIdleConnsPerHost = 1024, 1024
			t.ReadBufferSize, t.WriteBufferSize = h1ReadBufferSize, h1WriteBufferSize
			return t
		}},
		{"h1", func() http.RoundTripper {
			t := newH1Transport(1024, 1024, 0)
			t.proxied = false
			return t
		}},
	}
	for _, tc := range transports {
		for _, par := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/par=%d", tc.name, par), func(b *testing.B) {
				rt := tc.new()
				defer rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
				client := &http.Client{Transport: rt}
				b.ReportAllocs()
				b.SetParallelism(par)
				c0 := processCPU(b)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					var buf bytes.Buffer
					for pb.Next() {
						req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(reqBody))
						if err != nil {
							b.Error(err)
							return
						}
						req.Header.Set("Content-Type", "application/json")
						resp, err := client.Do(req)
						if err != nil {
							b.Error(err)
							return
						}
						buf.Reset()
						_, err = buf.ReadFrom(resp.Body)
						resp.Body.Close()
						if err != nil || buf.Len() != len(h1BenchAnswer) {
							b.Errorf("body of %d bytes: %v", buf.Len(), err)
							return
						}
					}
				})
				b.StopTimer()
				b.ReportMetric(float64((processCPU(b)-c0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
			})
		}
	}
}
