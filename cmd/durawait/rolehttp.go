package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// httpSide is what listenHTTP fills: the process's HTTP server.
type httpSide struct {
	// mux routes /healthz, /metrics, /readyz and, for a front end, /mcp,
	// /events and /hooks/{name}.
	mux *http.ServeMux
	// addr is the listener's address (the server name of otelhttp's
	// metrics); mcpURL the MCP endpoint on it.
	addr, mcpURL string
	// shutdown stops the server, once: serve calls it after the front
	// end drained, the step's stop again at the end.
	shutdown func()
}

// listenHTTP claims the HTTP address first, so /healthz answers (503) while
// the rest starts and a port conflict is reported at once. It fills
// p.http; with --stdio it listens nowhere and fills nothing.
func (p *process) listenHTTP(ctx context.Context) (func(), error) {
	if p.cfg.Stdio || p.cfg.HTTP == "" {
		return nil, nil
	}
	ln, err := listenReleased(ctx, p.cfg.HTTP, portReleaseWindow, p.logger)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("listen on %s: %w; run with --http HOST:PORT (or set http in the config) to listen elsewhere", p.cfg.HTTP, err)
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", p.cfg.HTTP, err)
	}
	// A request held while durawait starts is read after the hold, within
	// the server's read timeout.
	readTimeout := time.Duration(p.cfg.HTTPReadTimeoutSec) * time.Second
	p.mcpRoute.hold = startingHoldWithin(readTimeout)
	p.eventsRoute.hold = p.mcpRoute.hold
	p.hooksRoute.hold = p.mcpRoute.hold
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", p.health)
	mux.Handle("GET /metrics", p.metricsHandler())
	mux.Handle("GET /readyz", p.ready)
	if p.roles.front {
		mux.Handle("/mcp", &p.mcpRoute)
		mux.Handle("/events", &p.eventsRoute)
		mux.Handle("/hooks/{name}", &p.hooksRoute)
	}
	// Reading a request (headers and body) is bounded; writing is not, so a
	// 300 s wait's stream is never cut. Idle keep-alive connections are
	// closed after two minutes.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: min(10*time.Second, readTimeout),
		ReadTimeout: readTimeout, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.logger.Error("HTTP server stopped", "error", err)
			p.exit()
		}
	}()
	addr := ln.Addr().String()
	p.http = &httpSide{
		mux: mux, addr: addr, mcpURL: "http://" + addr + "/mcp",
		shutdown: sync.OnceFunc(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
		}),
	}
	p.logger.Info("listening", "http", "http://"+addr)
	return p.http.shutdown, nil
}

// mcpURL is the MCP endpoint's URL, "" when the process serves no HTTP.
func (p *process) mcpURL() string {
	if p.http == nil {
		return ""
	}
	return p.http.mcpURL
}
