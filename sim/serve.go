package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mgrpo/mgrpo/internal/httpserve"
)

// Service is one HTTP service to serve: a name for messages, the address to
// listen on (host:port; port 0 picks a free one), its handler and its
// server's limits.
type Service struct {
	Name    string
	Addr    string
	Handler http.Handler
	// Limits bound the service's connections; the zero value means
	// httpserve.Streaming(): the inference server streams generations and
	// holds stalled requests, the trainer long-polls its futures, so no
	// write timeout, and each handler caps its own request bodies (the
	// inference server's Config.MaxBodyBytes, the trainer's, the web's
	// MaxRequestBytes).
	Limits httpserve.Limits
}

// Servers is a set of running HTTP services, started by Listen.
type Servers struct {
	list []*http.Server
	// URLs are the services' base URLs ("http://127.0.0.1:18000"), in the
	// order they were given.
	URLs []string
	wg   sync.WaitGroup
	errc chan error
	once sync.Once
}

// ListenError says which service could not listen on its address.
type ListenError struct {
	Service, Addr string
	Err           error
}

func (e *ListenError) Error() string {
	return fmt.Sprintf("%s: listen on %s: %v", e.Service, e.Addr, e.Err)
}
func (e *ListenError) Unwrap() error { return e.Err }

// Listen listens on every service's address first, so that a taken port
// fails (with a *ListenError) before any service starts, then serves each
// in the background until Stop.
func Listen(services []Service) (*Servers, error) {
	listeners := make([]net.Listener, 0, len(services))
	for _, sv := range services {
		l, err := net.Listen("tcp", sv.Addr)
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return nil, &ListenError{Service: sv.Name, Addr: sv.Addr, Err: err}
		}
		listeners = append(listeners, l)
	}
	s := &Servers{errc: make(chan error, len(services))}
	for i, sv := range services {
		limits := sv.Limits
		if limits == (httpserve.Limits{}) {
			limits = httpserve.Streaming()
		}
		srv := limits.Server(sv.Handler)
		s.list = append(s.list, srv)
		s.URLs = append(s.URLs, "http://"+listeners[i].Addr().String())
		s.wg.Add(1)
		go func(l net.Listener) {
			defer s.wg.Done()
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.errc <- fmt.Errorf("%s: %w", sv.Name, err)
			}
		}(listeners[i])
	}
	return s, nil
}

// Err delivers the first error of a service that stopped serving on its
// own.
func (s *Servers) Err() <-chan error { return s.errc }

// Stop shuts the services down, giving requests up to grace to finish;
// stalled or streaming requests that outlive it are closed. A zero grace
// closes at once (net/http counts a connection that never sent a request as
// busy for its first five seconds, so a graceful stop can idle that long for
// nothing when the caller knows no request is running). It is idempotent.
func (s *Servers) Stop(grace time.Duration) {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		for _, srv := range s.list {
			if grace <= 0 || srv.Shutdown(ctx) != nil {
				srv.Close()
			}
		}
		s.wg.Wait()
	})
}
