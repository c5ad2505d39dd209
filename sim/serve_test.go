package sim

import (
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
)

func TestListenServesAndStops(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok "+r.URL.Path) })
	s, err := Listen([]Service{{Name: "a", Addr: "127.0.0.1:0", Handler: h}, {Name: "b", Addr: "127.0.0.1:0", Handler: h}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range s.URLs {
		resp, err := http.Get(u + "/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "ok /x" {
			t.Errorf("%s answered %q", u, body)
		}
	}
	s.Stop(0)
	s.Stop(0) // idempotent
	if _, err := http.Get(s.URLs[0]); err == nil {
		t.Error("a stopped service still answers")
	}
}

func TestListenTakenPortNamesTheService(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = Listen([]Service{{Name: "llm", Addr: "127.0.0.1:0", Handler: http.NotFoundHandler()}, {Name: "web", Addr: l.Addr().String(), Handler: http.NotFoundHandler()}})
	var le *ListenError
	if !errors.As(err, &le) || le.Service != "web" || le.Addr != l.Addr().String() {
		t.Fatalf("err %v, want a ListenError naming web and %s", err, l.Addr())
	}
}
