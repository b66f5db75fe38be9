package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"

	"go.temporal.io/sdk/client"

	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/internal/datadir"
	"github.com/durawait/durawait/internal/readiness"
	"github.com/durawait/durawait/internal/telemetry"
	"github.com/durawait/durawait/mcpfront"
)

// roles says which parts a process runs.
type roles struct {
	engine, worker, front bool
	// daemon runs them as the background daemon of stdio sessions: MCP on
	// a loopback port of its own, ports that are taken fall back to free
	// ones, and it exits when idle (see daemon_idle_exit_min).
	daemon bool
}

// runRoles runs the parts of durawait that roles names until ctx ends (or,
// with --stdio, until stdin closes), then stops them in reverse order.
//
// Which role gets what (the steps, in order: startSteps):
//
//	step              serve   worker   front   fills
//	startTelemetry    yes     yes      yes     telemetry
//	startPprof        yes     yes      yes     pprofAddr    (with --pprof)
//	listenHTTP        yes     yes      yes     http         (not with --stdio; /healthz answers 503 at once)
//	startEngine       yes     -        -       target       (not with --temporal: checkRoles sets target)
//	dialTemporal      yes     yes      yes     temporal
//	prepareNamespace  yes     yes      yes     -            (registers search attributes + retention on the embedded engine; checks a cluster)
//	startWorker       yes     yes      -       worker       (downstream servers, tmux, agents, catalog)
//	startFront        yes     -        yes     front        (the MCP front end)
//
// A step that needs what an earlier one fills says so (needs) rather than
// use it unset.
func runRoles(ctx context.Context, name string, r roles, cfg config.Config, stdin io.Reader, stdout, stderr io.Writer) error {
	p := newProcess(r, cfg, stderr)
	if err := p.checkRoles(name); err != nil {
		return err
	}
	if p.roles.engine {
		// Refused before anything listens: the refusal names the owner.
		if err := datadir.CheckFree(cfg.DataDir); err != nil {
			var inUse *datadir.InUseError
			if errors.As(err, &inUse) {
				inUse.Stop = stopCommand(datadir.Instance{Dir: inUse.Dir, Owner: inUse.Owner})
			}
			return err
		}
	}
	for _, key := range cfg.Retired {
		p.logger.Warn("a retired configuration key is ignored: liveness is per host now ([host] lease_sec, docs/hosts.md); remove it", "key", key)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.exit = cancel
	var started stops
	defer started.run()
	// On a failed start, or a stop before the front end was in place, the
	// requests waiting for it are answered (503) before the parts stop.
	defer p.abandonStartingRoutes()
	for _, step := range p.startSteps() {
		stop, err := step.start(ctx)
		if err != nil {
			return err
		}
		started.add(stop)
	}
	return p.serve(ctx, stdin, stdout)
}

// newProcess is a process of roles r before its steps ran.
func newProcess(r roles, cfg config.Config, stderr io.Writer) *process {
	level, _ := cfg.SlogLevel()
	return &process{
		roles:  r,
		cfg:    cfg,
		level:  level,
		logger: newLogger(cfg, stderr),
		exit:   func() {},
		health: &healthState{},
		ready:  &readiness.Handler{},
	}
}

// A startStep starts one part of a process, when its roles include that
// part, and returns what stops it (nil: nothing to stop). On an error it
// has stopped what it started.
type startStep struct {
	name  string
	start func(ctx context.Context) (stop func(), err error)
}

// startSteps are the process's start steps, in their order (the table at
// runRoles).
func (p *process) startSteps() []startStep {
	return []startStep{
		{"startTelemetry", p.startTelemetry},
		{"startPprof", p.startPprof},
		{"listenHTTP", p.listenHTTP},
		{"startEngine", p.startEngine},
		{"dialTemporal", p.dialTemporal},
		{"prepareNamespace", p.prepareNamespace},
		{"startWorker", p.startWorker},
		{"startFront", p.startFront},
	}
}

// needs is the error of a step run before the step that fills what it
// needs: the steps are out of order (a bug, not a configuration).
func needs(step, what string) error {
	return fmt.Errorf("%s needs %s: the start steps are out of order", step, what)
}

// stops are what stops the parts started so far.
type stops []func()

// add appends stop (nil: nothing to stop).
func (s *stops) add(stop func()) {
	if stop != nil {
		*s = append(*s, stop)
	}
}

// run stops the parts in reverse order of their start.
func (s *stops) run() {
	for i := len(*s) - 1; i >= 0; i-- {
		(*s)[i]()
	}
}

// abandonStartingRoutes answers the requests waiting for the front end
// 503, and later ones until it is in place (a no-op once it is).
func (p *process) abandonStartingRoutes() {
	p.mcpRoute.abandon()
	p.eventsRoute.abandon()
	p.hooksRoute.abandon()
}

// process is one durawait process while it starts and runs. Each start
// step fills one field, which the steps after it read (checkRoles may fill
// target ahead of them, for a cluster named on the command line);
// listenHTTP sets the starting routes' hold and serve their handlers and
// availability.
type process struct {
	// Set before the steps run (newProcess, checkRoles, runRoles).
	roles  roles
	cfg    config.Config
	level  slog.Level
	logger *slog.Logger
	// exit ends the process (the HTTP server failed, the daemon is idle).
	exit   context.CancelFunc
	health *healthState
	ready  *readiness.Handler
	// mcpRoute, eventsRoute and hooksRoute hold a request until the front
	// end is in place (serve), for up to their hold (listenHTTP:
	// startingHoldWithin), then answer it 503.
	mcpRoute, eventsRoute, hooksRoute startingRoute
	// availability is the downstream servers' status for the
	// durawait.downstream.available gauge, set once the roles started
	// (serve): a scrape or an export may read it from another goroutine
	// at any time.
	availability atomic.Pointer[func() map[string]string]

	// Filled by startTelemetry.
	telemetry *telemetry.Providers
	// Filled by startPprof: the profiler's listen address, "" when off.
	pprofAddr string
	// Filled by listenHTTP, when the process serves HTTP.
	http *httpSide
	// The Temporal the process connects to: set by checkRoles from
	// --temporal, or filled by startEngine.
	target temporalTarget
	// Filled by dialTemporal.
	temporal client.Client
	// Filled by startWorker, when the process runs a worker.
	worker *workerSide
	// Filled by startFront, when the process runs the front end.
	front *mcpfront.Front
}

// checkRoles decides the roles from the configuration and checks what they
// need before anything starts.
func (p *process) checkRoles(name string) error {
	if p.cfg.Temporal != "" {
		p.roles.engine = false
		p.target = temporalTarget{addr: p.cfg.Temporal}
	} else if !p.roles.engine {
		return fmt.Errorf("durawait %s needs a Temporal cluster: --temporal HOST:PORT, temporal in the config file, TEMPORAL_ADDRESS or a Temporal config profile (only serve embeds an engine)", name)
	}
	if p.roles.daemon {
		p.cfg = daemonConfig(p.cfg, p.logger)
	}
	if p.roles.front {
		if err := p.cfg.CheckMCPAuth(); err != nil {
			return fmt.Errorf("configuration: %w", err)
		}
	}
	return nil
}
