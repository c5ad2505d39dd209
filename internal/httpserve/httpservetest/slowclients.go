// Package httpservetest checks that a running HTTP server closes the
// connections of slow clients, as httpserve.Limits bound them.
package httpservetest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// grace is how long past its timeout a server gets to close a slow
// connection before the check fails: generous, since the check is about
// the connection being closed at all, never about speed.
const grace = 15 * time.Second

// CheckSlowClients opens three slow clients against the server listening
// on addr (host:port), whose timeouts are at most timeout, and fails t
// unless the server closes every connection: one sending its request's
// headers a byte at a time, one sending a body to post (a route that reads
// its body, where there is one) a byte at a time after complete headers,
// one idle after a complete GET of get.
func CheckSlowClients(t *testing.T, addr, get, post string, timeout time.Duration) {
	t.Helper()
	header := "GET " + get + " HTTP/1.1\r\nHost: " + addr + "\r\nX-Slow: " + strings.Repeat("a", 1<<16) + "\r\n\r\n"
	// A body small enough that net/http would wait to discard it, were the
	// handler not to read it.
	body := "POST " + post + " HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n"
	cases := []struct {
		name       string
		head, drip string
	}{
		{"headers a byte at a time", "", header},
		{"body a byte at a time", body, strings.Repeat(" ", 4096)},
		{"idle after a request", "GET " + get + " HTTP/1.1\r\nHost: " + addr + "\r\n\r\n", ""},
	}
	errs := make([]error, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = closedBy(addr, c.head, c.drip, timeout+grace)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s, %s: %v", addr, cases[i].name, err)
		}
	}
}

// closedBy connects to addr, writes head, then drip a byte every 50 ms,
// and returns nil once the server has closed the connection, or an error
// if it is still open after wait.
func closedBy(addr, head, drip string, wait time.Duration) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, head); err != nil {
		return fmt.Errorf("write the request head: %w", err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := range len(drip) {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := conn.Write([]byte{drip[i]}); err != nil {
				return
			}
		}
	}()
	if err := conn.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return err
	}
	// Whatever the server answers (nothing, a 400, a 408, a full
	// response), the read ends when it closes the connection.
	_, err = io.Copy(io.Discard, conn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("the connection is still open after %v", wait)
	}
	return nil
}
