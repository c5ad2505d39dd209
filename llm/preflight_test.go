package llm

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestPreflightNamesEveryFailingEndpoint(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			t.Errorf("preflight asked %s, want /health", r.URL.Path)
		}
	}))
	defer ok.Close()
	sick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer sick.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	withSecret := strings.Replace(sick.URL, "http://", "http://alice:s3cret@", 1) + "/v1"

	p, err := NewPool("planner", []string{ok.URL + "/v1", withSecret, dead}, PoolConfig{ProbeInterval: time.Hour}, http.DefaultClient, discardLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	err = p.Preflight(context.Background())
	if err == nil {
		t.Fatal("preflight passed with a sick and a dead endpoint")
	}
	msg := err.Error()
	for _, want := range []string{"planner endpoint " + sick.URL + ":", "503", "planner endpoint " + dead, "unreachable"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, ok.URL) {
		t.Errorf("error %q names the healthy endpoint", msg)
	}
	if strings.Contains(msg, "s3cret") {
		t.Errorf("error %q leaks a credential", msg)
	}
}
