package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/internal/httpserve"
	"github.com/mgrpo/mgrpo/run"
)

// metricsFlag is --metrics-addr, shared by the commands that run agents.
func metricsFlag() cli.Flag {
	return &cli.StringFlag{Name: "metrics-addr", Category: run.Category("output"), Usage: "serve Prometheus /metrics on `ADDR` (host:port; port 0 picks one) while the command runs"}
}

// metricsServer serves a registry's /metrics until stopped.
type metricsServer struct {
	srv  *http.Server
	done chan struct{}
	addr string // where it listens (host:port)
}

// startMetrics returns a registry holding the Go runtime's and the
// process's collectors and, when addr is set, serves it on addr at
// /metrics, logging the URL. An address that cannot be listened on is a
// usage error naming it, before any work starts. Stop the server with stop.
func startMetrics(addr string, logger *slog.Logger) (*prometheus.Registry, *metricsServer, error) {
	return startMetricsWithin(addr, logger, httpserve.Short())
}

// startMetricsWithin is startMetrics with the server's limits: a scrape's
// answer is short, so Short's (a minute to write it, 1 MiB bodies though
// /metrics takes none).
func startMetricsWithin(addr string, logger *slog.Logger, limits httpserve.Limits) (*prometheus.Registry, *metricsServer, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if addr == "" {
		return reg, nil, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, usagef("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	m := &metricsServer{srv: limits.Server(mux), done: make(chan struct{}), addr: l.Addr().String()}
	go func() {
		defer close(m.done)
		if err := m.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server stopped", "addr", l.Addr().String(), "err", err)
		}
	}()
	logger.Info("serving metrics", "url", fmt.Sprintf("http://%s/metrics", l.Addr()))
	return reg, m, nil
}

// stop shuts the server down, letting a scrape in progress finish for up to
// a second. A nil server does nothing.
func (m *metricsServer) stop() {
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if m.srv.Shutdown(ctx) != nil {
		m.srv.Close()
	}
	<-m.done
}
