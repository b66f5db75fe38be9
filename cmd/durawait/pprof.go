package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// startPprof serves Go's profiler (CPU, heap, goroutines, ...) on its own
// loopback listener when pprof is set, apart from the MCP listener: a
// profile shows the process's internals, so it is never on the address
// callers reach. Measure with it, e.g.
// go tool pprof http://127.0.0.1:6060/debug/pprof/profile?seconds=30.
func (p *process) startPprof(context.Context) (func(), error) {
	if p.cfg.Pprof == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", p.cfg.Pprof)
	if err != nil {
		return nil, fmt.Errorf("pprof: listen on %s: %w", p.cfg.Pprof, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.logger.Warn("pprof listener stopped", "error", err)
		}
	}()
	p.pprofAddr = ln.Addr().String()
	p.logger.Info("profiler listening", "pprof", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
