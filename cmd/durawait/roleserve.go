package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/internal/hooks"
	"github.com/durawait/durawait/internal/readiness"
	"github.com/durawait/durawait/mcpfront"
	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

// serve marks the process ready and serves until ctx ends: MCP on stdio or
// HTTP for a front end, only /healthz for a worker. A front end drains its
// calls before the steps stop.
func (p *process) serve(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	if p.temporal == nil {
		return needs("serve", "dialTemporal's client")
	}
	status := p.downstreamStatus()
	if status != nil {
		p.availability.Store(&status)
	}
	if p.front == nil {
		p.markReady(status)
		<-ctx.Done()
		p.ready.SetDraining()
		return nil
	}
	if p.cfg.Stdio {
		p.logger.Info("serving MCP on stdio")
		p.markReady(status)
		// A signal drains the calls first (they answer "call again"), then
		// ends the session.
		serveCtx, endServe := context.WithCancel(context.WithoutCancel(ctx))
		defer endServe()
		go func() {
			select {
			case <-ctx.Done():
				drainFront(p.front, p.logger)
				endServe()
			case <-serveCtx.Done():
			}
		}()
		return mcpwire.ServeStdio(serveCtx, p.front.Served(), stdin, stdout)
	}
	if p.http == nil {
		return needs("serve", "listenHTTP's listener (the front end serves HTTP)")
	}
	var ownDataDir string
	if p.roles.engine {
		ownDataDir = p.cfg.DataDir
	}
	authenticate, err := httpAuth(ctx, p.cfg, ownDataDir, p.roles.daemon, p.logger)
	if err != nil {
		return err
	}
	httpOpts := mcpwire.HTTPOptions{
		Loopback:       p.cfg.HTTPLoopback(),
		AllowedOrigins: p.cfg.AllowedOrigins,
		Authenticate:   authenticate,
	}
	var mcpHandler http.Handler = mcpwire.NewHTTPHandler(p.front.Served(), "/mcp", httpOpts)
	eventsHandler := p.front.EventsHandler(httpOpts)
	hookSet, err := loadHooks(p.cfg, p.logger)
	if err != nil {
		return err
	}
	hooksHandler := p.front.HooksHandler(httpOpts, hookSet)
	if p.roles.daemon && p.cfg.DaemonIdleExitMin > 0 {
		// An operator watching /events keeps the daemon up, as a client
		// on /mcp does.
		idle := &activity{}
		mcpHandler, eventsHandler, hooksHandler = idle.wrap(mcpHandler), idle.wrap(eventsHandler), idle.wrap(hooksHandler)
		go watchIdle(ctx, idle, time.Duration(p.cfg.DaemonIdleExitMin)*time.Minute, runningWaits(p.temporal, p.cfg.Namespace), p.logger, p.exit)
	}
	p.mcpRoute.set(p.traced(mcpHandler))
	p.eventsRoute.set(eventsHandler)
	p.hooksRoute.set(p.traced(hooksHandler))
	p.markReady(status)
	p.logger.Info("durawait ready", "mcp", p.http.mcpURL)
	<-ctx.Done()
	p.logger.Info("shutting down")
	// /readyz fails from now on, while the listener still answers; for
	// drain_delay_sec new calls are still taken, so a load balancer's
	// probe sees the front leave before its calls are cut.
	p.ready.SetDraining()
	if delay := time.Duration(p.cfg.DrainDelaySec) * time.Second; delay > 0 && !p.roles.daemon {
		// (Not the stdio daemon: no load balancer reads its /readyz.)
		p.logger.Info("readiness withdrawn; taking calls until the drain", "drain_delay", delay)
		awaitDrainDelay(delay)
	}
	// Answer the calls in flight, then close the listener; the steps' stops
	// then stop the worker and close the Temporal client.
	drainFront(p.front, p.logger)
	p.http.shutdown()
	return nil
}

// loadHooks reads the hooks' secrets (events.hooks_file), or none when the
// file is not set.
func loadHooks(cfg config.Config, logger *slog.Logger) (*hooks.Set, error) {
	if cfg.Events.HooksFile == "" {
		return nil, nil
	}
	set, err := hooks.Load(cfg.Events.HooksFile, workflows.CheckEventName, func(err error) {
		logger.Error("could not reload the hooks file", "error", err)
	})
	if err != nil {
		return nil, err
	}
	return set, nil
}

// awaitDrainDelay waits out drain_delay_sec, or until a second SIGTERM
// or interrupt says to drain now.
func awaitDrainDelay(delay time.Duration) {
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-again:
	}
}

// markReady marks the process ready, once everything it serves is in
// place (for an HTTP front end: authentication set up and /mcp and /events
// routed): /healthz says ready and /readyz starts running its checks, so
// /readyz is never 200 while /mcp still answers 503 (starting).
func (p *process) markReady(status func() map[string]string) {
	p.ready.SetChecks(readiness.Temporal(p.temporal, p.target.addr), readiness.Workers(p.temporal, p.cfg.TaskQueue, nil))
	p.health.setReady(p.target.addr, status)
}

// downstreamStatus reports the downstream servers for /healthz: the
// worker's own connections, live, or else the front end's view of the
// workers' catalog.
func (p *process) downstreamStatus() func() map[string]string {
	switch {
	case p.worker != nil:
		manager := p.worker.manager
		return func() map[string]string { return managerStatus(manager) }
	case p.front != nil:
		return p.front.DownstreamStatus
	}
	return nil
}

// runInBackground runs fn in a goroutine on a context of its own, derived
// from parent, and returns what cancels it and waits for it to return.
func runInBackground(parent context.Context, fn func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(parent)
	var done sync.WaitGroup
	done.Go(func() { fn(ctx) })
	return func() { cancel(); done.Wait() }
}

// drainTimeout bounds how long a shutdown waits for the calls in flight to
// answer.
const drainTimeout = 10 * time.Second

// drainFront stops taking tool calls and answers those in flight with
// "call again with the same arguments".
func drainFront(front *mcpfront.Front, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	front.Drain(ctx)
	if ctx.Err() != nil {
		logger.Warn("some calls did not answer before the shutdown went on", "waited", drainTimeout)
	}
}
