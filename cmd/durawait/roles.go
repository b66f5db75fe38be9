package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"google.golang.org/grpc"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/internal/callevents"
	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/internal/datadir"
	"github.com/durawait/durawait/internal/engine"
	"github.com/durawait/durawait/internal/enginecreds"
	"github.com/durawait/durawait/internal/namespace"
	"github.com/durawait/durawait/internal/readiness"
	"github.com/durawait/durawait/internal/samplehub"
	"github.com/durawait/durawait/internal/telemetry"
	"github.com/durawait/durawait/mcpfront"
	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/worker"
	"github.com/durawait/durawait/worker/downstream"
	"github.com/durawait/durawait/worker/hosting"
	"github.com/durawait/durawait/workflows"
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
// Which role gets what:
//
//	step          serve   worker   front
//	listenHTTP    yes     yes      yes     (not with --stdio; /healthz answers 503 at once)
//	startEngine   yes     -        -       (not with --temporal)
//	dialTemporal  yes     yes      yes
//	prepareNS     yes     yes      yes     (registers search attributes + retention on the embedded engine; checks a cluster)
//	startWorker   yes     yes      -       (downstream servers, tmux, agents, catalog)
//	startFront    yes     -        yes     (the MCP front end)
func runRoles(ctx context.Context, name string, r roles, cfg config.Config, stdin io.Reader, stdout, stderr io.Writer) error {
	level, _ := cfg.SlogLevel()
	p := &process{
		roles:  r,
		cfg:    cfg,
		level:  level,
		logger: newLogger(cfg, stderr),
		health: &healthState{},
		ready:  &readiness.Handler{},
	}
	if err := p.checkRoles(name); err != nil {
		return err
	}
	for _, key := range cfg.Retired {
		p.logger.Warn("a retired configuration key is ignored: liveness is per host now ([host] lease_sec, docs/hosts.md); remove it", "key", key)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.exit = cancel
	var stops []func()
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}()
	// On a failed start, or a stop before the front end was in place, the
	// requests waiting for it are answered (503) before the parts stop.
	defer p.abandonStartingRoutes()
	for _, start := range []startStep{p.startTelemetry, p.startPprof, p.listenHTTP, p.startEngine, p.dialTemporal, p.prepareNamespace, p.startWorker, p.startFront} {
		stop, err := start(ctx)
		if err != nil {
			return err
		}
		if stop != nil {
			stops = append(stops, stop)
		}
	}
	return p.serve(ctx, stdin, stdout)
}

// abandonStartingRoutes answers the requests waiting for the front end
// 503, and later ones until it is in place (a no-op once it is).
func (p *process) abandonStartingRoutes() {
	p.mcpRoute.abandon()
	p.eventsRoute.abandon()
}

// A startStep starts one part of a process, when its roles include that
// part, and returns what stops it (nil: nothing to stop).
type startStep func(ctx context.Context) (stop func(), err error)

// process is one durawait process while it starts and runs: what each start
// step leaves for the steps after it.
type process struct {
	roles  roles
	cfg    config.Config
	level  slog.Level
	logger *slog.Logger
	// exit ends the process (the HTTP server failed, the daemon is idle).
	exit context.CancelFunc

	// Set by listenHTTP, when the process serves HTTP.
	health *healthState
	ready  *readiness.Handler
	mux    *http.ServeMux
	mcpURL string
	// mcpRoute and eventsRoute hold a request until the front end is in
	// place, for up to their hold (startingHoldWithin), then answer it 503.
	mcpRoute, eventsRoute startingRoute
	shutdownHTTP          func()

	// Set by startEngine (the embedded engine's address) or from --temporal.
	temporalAddr string
	// Set by dialTemporal.
	temporal client.Client

	// Set by startWorker, when the process runs a worker.
	// host is the worker's host (its waits' loops run there).
	host       string
	manager    *downstream.Manager
	downstream *activities.Downstream
	hub        *samplehub.Hub

	// Set by startFront, when the process runs the front end.
	front *mcpfront.Front

	// Set by startTelemetry.
	telemetry *telemetry.Providers
	// availability is the downstream servers' status for the
	// durawait.downstream.available gauge, set once the roles started
	// (serve): a scrape or an export may read it from another goroutine
	// at any time.
	availability atomic.Pointer[func() map[string]string]
	// httpAddr is the HTTP listener's address (listenHTTP): the server
	// name of otelhttp's metrics.
	httpAddr string
	// pprofAddr is the profiler's listen address (startPprof), if any.
	pprofAddr string
	// engineCreds are the embedded engine's credentials (startEngine),
	// which the process's client presents.
	engineCreds enginecreds.Files
}

// checkRoles decides the roles from the configuration and checks what they
// need before anything starts.
func (p *process) checkRoles(name string) error {
	if p.cfg.Temporal != "" {
		p.roles.engine = false
		p.temporalAddr = p.cfg.Temporal
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

// listenHTTP claims the HTTP address first, so /healthz answers (503) while
// the rest starts and a port conflict is reported at once.
func (p *process) listenHTTP(ctx context.Context) (func(), error) {
	p.shutdownHTTP = func() {}
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
	p.mux = http.NewServeMux()
	p.mux.Handle("GET /healthz", p.health)
	p.mux.Handle("GET /metrics", p.metricsHandler())
	p.mux.Handle("GET /readyz", p.ready)
	if p.roles.front {
		p.mux.Handle("/mcp", &p.mcpRoute)
		p.mux.Handle("/events", &p.eventsRoute)
	}
	// Reading a request (headers and body) is bounded; writing is not, so a
	// 300 s wait's stream is never cut. Idle keep-alive connections are
	// closed after two minutes.
	srv := &http.Server{Handler: p.mux, ReadHeaderTimeout: min(10*time.Second, readTimeout),
		ReadTimeout: readTimeout, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.logger.Error("HTTP server stopped", "error", err)
			p.exit()
		}
	}()
	p.shutdownHTTP = sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	p.httpAddr = ln.Addr().String()
	p.mcpURL = "http://" + ln.Addr().String() + "/mcp"
	p.logger.Info("listening", "http", "http://"+ln.Addr().String())
	return p.shutdownHTTP, nil
}

// startEngine starts the embedded Temporal engine (serve without
// --temporal), after taking the data dir's lock.
func (p *process) startEngine(context.Context) (func(), error) {
	if !p.roles.engine {
		return nil, nil
	}
	owner := datadir.Owner{PID: os.Getpid(), HTTP: p.mcpURL, Namespace: p.cfg.Namespace, StartedAt: time.Now().UTC()}
	if p.roles.daemon {
		owner.Log = datadir.LogPath(p.cfg.DataDir)
	}
	lock, err := datadir.Acquire(p.cfg.DataDir, owner)
	if err != nil {
		return nil, err
	}
	spans := p.engineSpans()
	eng, err := engine.Start(engine.Options{
		DataDir:   p.cfg.DataDir,
		Port:      p.cfg.EnginePort,
		UIPort:    p.cfg.UIPort,
		Namespace: p.cfg.Namespace,
		// A new namespace is created with them; prepareNamespace adds
		// them to one an earlier release created.
		SearchAttributes: workflows.SearchAttributes(),
		Retention:        p.cfg.Retention(),
		// The SDK's workflow cache is the process's: the engine's own
		// workers create it (see startWorker).
		WorkflowCacheSize: workflowCacheSize,
		Logger:            p.logger,
		LogLevel:          max(p.level, slog.LevelWarn),
		SpanExporter:      spans,
		// Its billable actions, on /metrics (durawait.engine.actions).
		MeterProvider: p.engineMeters(),
	})
	if err != nil {
		// An engine that did not start does not shut its exporter down.
		shutdownExporter(spans, p.logger)
		lock.Release()
		return nil, explainEngineStart(err)
	}
	stop := func() { eng.Stop(); lock.Release() }
	p.temporalAddr = eng.Addr()
	p.engineCreds = eng.Credentials()
	owner.Engine = p.temporalAddr
	owner.UI = eng.UILoginURL()
	if err := lock.Update(owner); err != nil {
		stop()
		return nil, err
	}
	// The UI's link holds its login token (good until the next start):
	// `durawait status` prints it too.
	p.logger.Info("embedded Temporal engine started", "addr", p.temporalAddr, "ui", orDisabled(eng.UILoginURL()), "data_dir", p.cfg.DataDir)
	return stop, nil
}

// dialTemporal connects the process's Temporal client.
func (p *process) dialTemporal(ctx context.Context) (func(), error) {
	opts, err := p.cfg.Connection.ClientOptions()
	if err != nil {
		return nil, err
	}
	opts.HostPort = p.temporalAddr
	opts.Namespace = p.cfg.Namespace
	if p.roles.engine {
		// The embedded engine lets in only the data dir's certificate.
		if opts.ConnectionOptions.TLS, err = p.engineCreds.ClientTLS(); err != nil {
			return nil, fmt.Errorf("connect to the embedded engine: %w", err)
		}
	}
	opts.Logger = sdklog.NewStructuredLogger(p.logger.With("component", "temporal-sdk"))
	// Tells the front end whether a call started its wait or attached.
	opts.ConnectionOptions.DialOptions = append(opts.ConnectionOptions.DialOptions, grpc.WithChainUnaryInterceptor(mcpfront.StartReporter))
	tc, err := client.DialContext(ctx, p.instrumented(opts))
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s%s: %w", p.temporalAddr, p.connectionNote(), err)
	}
	p.temporal = tc
	if !p.roles.engine {
		c := p.cfg.Connection
		p.logger.Info("connected to Temporal", "addr", c.Address(), "namespace", c.Namespace(), "tls", c.TLS(), "api_key", c.APIKey(),
			"addr_from", c.Sources["address"], "namespace_from", c.Sources["namespace"], "tls_from", c.Sources["tls"], "api_key_from", c.Sources["api_key"])
	}
	return tc.Close, nil
}

// connectionNote says, for an error, how the process connects to a
// cluster: with or without TLS and an API key, and where the address came
// from.
func (p *process) connectionNote() string {
	if p.roles.engine {
		return ""
	}
	c := p.cfg.Connection
	note := " (address from " + c.Sources["address"]
	switch {
	case c.TLS() && c.APIKey():
		note += "; TLS and API key"
	case c.TLS():
		note += "; TLS"
	default:
		note += "; plain gRPC, no TLS"
	}
	return note + ")"
}

// prepareNamespaceTimeout bounds the namespace's preparation at start-up.
const prepareNamespaceTimeout = 30 * time.Second

// prepareNamespace makes sure the namespace has durawait's search
// attributes before any worker or front end uses them (a workflow that
// upserts an unregistered one stalls). On the embedded engine it registers
// the missing ones (a data dir of an earlier release has none) and sets the
// retention of closed waits (retention_hours); on a cluster it only checks,
// and refuses to start with the exact `temporal operator search-attribute
// create` lines for what is missing.
func (p *process) prepareNamespace(ctx context.Context) (func(), error) {
	ctx, cancel := context.WithTimeout(ctx, prepareNamespaceTimeout)
	defer cancel()
	services := namespace.Services{Operator: p.temporal.OperatorService(), Workflow: p.temporal.WorkflowService()}
	if !p.roles.engine {
		if err := namespace.CheckCluster(ctx, services, namespace.ClusterCheck{
			Namespace: p.cfg.Namespace, SearchAttributes: workflows.SearchAttributes(), Names: workflows.SearchAttributeNames,
			Connect: p.cfg.Connection.CLIFlags(), Retention: p.cfg.Retention(),
		}); err != nil {
			return nil, fmt.Errorf("Temporal at %s%s: %w", p.temporalAddr, p.connectionNote(), err)
		}
		return nil, nil
	}
	if err := namespace.PrepareEmbedded(ctx, services, namespace.EmbeddedOptions{
		Namespace: p.cfg.Namespace, SearchAttributes: workflows.SearchAttributes(),
		Names: workflows.SearchAttributeNames, Retention: p.cfg.Retention(),
	}); err != nil {
		return nil, fmt.Errorf("embedded engine: %w", err)
	}
	return nil, nil
}

// startWorker starts the worker's side: the downstream servers, the
// workers (probe loops, agents, tmux) and the catalog publisher. A front end
// without a worker in its process starts no downstream server and runs no
// tmux.
func (p *process) startWorker(ctx context.Context) (func(), error) {
	if !p.roles.worker {
		return nil, nil
	}
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	cfg, logger := p.cfg, p.logger

	p.manager = downstream.NewManager(serverConfigs(cfg), downstream.Options{}, logger.With("component", "downstream"))
	stops = append(stops, runInBackground(context.Background(), p.manager.Run))
	readyCtx, readyCancel := context.WithTimeout(ctx, 30*time.Second)
	_ = p.manager.WaitReady(readyCtx)
	readyCancel()

	var tmuxQueue string
	if cfg.ToolEnabled(workflows.ToolListPanes) || cfg.ToolEnabled(workflows.ToolWaitForText) {
		tmuxQueue = tmuxHostQueue(cfg)
	}
	p.downstream = &activities.Downstream{Servers: p.manager, ProbeTools: probeTools(cfg), TmuxHostQueue: tmuxQueue}
	p.hub = samplehub.New()

	host, err := hostID(cfg)
	if err != nil {
		stop()
		return nil, fmt.Errorf("host: %w", err)
	}
	hostLock, err := datadir.AcquireHost(cfg.DataDir)
	if err != nil {
		stop()
		return nil, err
	}
	stops = append(stops, hostLock.Release)
	p.host = host
	runner, err := agentRunner(cfg, p.temporal, host, logger)
	if err != nil {
		stop()
		return nil, err
	}
	if runner != nil {
		runner.Observer = p.hub
	}
	// Waits of the same probe on this worker share its calls (one per tick).
	prober := activities.NewSharedProber(p.manager)
	// A wait's workflow runs a task at its start and at its end, and
	// sleeps between: the SDK keeps the workflows it ran last in memory
	// (a goroutine and its state each), the others are replayed from their
	// few events when their next task comes. The cache is the process's,
	// made by the first worker: with an embedded engine, the engine's own
	// (see startEngine); else these.
	sdkworker.SetStickyWorkflowCacheSize(workflowCacheSize)
	w, err := worker.New(worker.Options{
		Client: p.temporal, Namespace: cfg.Namespace, TaskQueue: cfg.TaskQueue, Prober: prober, Downstream: p.downstream,
		Observer: p.observer(p.hub), Agents: runner, TmuxQueue: tmuxQueue,
		Host: host, Instance: newInstance(host), Machine: queueSafe(machineName()), Lease: cfg.HostLease(),
		EndsDir: filepath.Join(cfg.DataDir, hosting.EndsFolder),
		Logger:  logger.With("component", "host"),
	})
	if err == nil {
		err = w.Start()
	}
	if err != nil {
		stop()
		return nil, err
	}
	stops = append(stops, w.Stop)

	publisher := worker.NewCatalogPublisher(p.temporal, cfg.TaskQueue, p.downstream.Catalog, logger.With("component", "catalog"))
	p.manager.OnChanged(publisher.Changed)
	stops = append(stops, runInBackground(ctx, publisher.Run))
	return stop, nil
}

// workflowCacheSize is how many workflows a worker keeps in memory
// between their tasks (the SDK's default is 10,000).
const workflowCacheSize = 100

// startFront builds the MCP front end. With a worker in the process it
// reaches the worker's side directly and reads the in-process feed;
// otherwise it reaches the workers through Temporal and polls their
// catalog.
func (p *process) startFront(ctx context.Context) (func(), error) {
	if !p.roles.front {
		return nil, nil
	}
	cfg := p.cfg
	var feed mcpfront.EventFeed
	var workers mcpfront.Workers = mcpfront.TemporalWorkers{Client: p.temporal, TaskQueue: cfg.TaskQueue}
	if p.roles.worker {
		feed = p.hub
		workers = worker.Local{Downstream: p.downstream}
	}
	p.front = mcpfront.New(mcpfront.Options{
		Temporal:  p.temporal,
		Namespace: cfg.Namespace,
		TaskQueue: cfg.TaskQueue,
		Workers:   workers,
		Events:    feed,
		Host:      p.host,
		Agents: mcpfront.AgentOptions{
			Limits:     workflows.AgentLimits{Providers: cfg.Agents.ProviderNames(), AllowedRoots: cfg.Agents.AllowedRoots},
			WaitWindow: cfg.Agents.WaitWindow(),
			MaxRun:     cfg.Agents.MaxRun(),
			CancelWait: cfg.Agents.CancelGrace() + 30*time.Second,
		},
		Tmux: mcpfront.TmuxOptions{
			ListPanes:   cfg.ToolEnabled(workflows.ToolListPanes),
			WaitForText: cfg.ToolEnabled(workflows.ToolWaitForText),
			Socket:      cfg.Tmux.Socket,
			MaxWait:     cfg.TmuxWaitMax(),
		},
		CallEvents: mcpfront.CallEventOptions{Hub: callevents.NewHub(0), ResultMaxLength: cfg.EventResultMaxLen},
		Logger:     p.logger.With("component", "mcpfront"),
		Version:    version,
		Telemetry:  p.frontTelemetry(),
	})
	if p.roles.worker {
		p.manager.OnChanged(func() { p.front.Refresh(ctx) })
		p.front.Refresh(ctx) // a change between New and the line above
		return nil, nil
	}
	return runInBackground(ctx, func(ctx context.Context) { p.front.WatchCatalog(ctx, catalogPollInterval) }), nil
}

// serve marks the process ready and serves until ctx ends: MCP on stdio or
// HTTP for a front end, only /healthz for a worker. A front end drains its
// calls before the steps stop.
func (p *process) serve(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
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
	if p.roles.daemon && p.cfg.DaemonIdleExitMin > 0 {
		// An operator watching /events keeps the daemon up, as a client
		// on /mcp does.
		idle := &activity{}
		mcpHandler, eventsHandler = idle.wrap(mcpHandler), idle.wrap(eventsHandler)
		go watchIdle(ctx, idle, time.Duration(p.cfg.DaemonIdleExitMin)*time.Minute, runningWaits(p.temporal, p.cfg.Namespace), p.logger, p.exit)
	}
	p.mcpRoute.set(p.traced(mcpHandler))
	p.eventsRoute.set(eventsHandler)
	p.markReady(status)
	p.logger.Info("durawait ready", "mcp", p.mcpURL)
	<-ctx.Done()
	p.logger.Info("shutting down")
	// /readyz fails from now on, while the listener still answers.
	p.ready.SetDraining()
	// Answer the calls in flight, then close the listener; the steps' stops
	// then stop the worker and close the Temporal client.
	drainFront(p.front, p.logger)
	p.shutdownHTTP()
	return nil
}

// markReady marks the process ready, once everything it serves is in
// place (for an HTTP front end: authentication set up and /mcp and /events
// routed): /healthz says ready and /readyz starts running its checks, so
// /readyz is never 200 while /mcp still answers 503 (starting).
func (p *process) markReady(status func() map[string]string) {
	p.ready.SetChecks(readiness.Temporal(p.temporal, p.temporalAddr), readiness.Workers(p.temporal, p.cfg.TaskQueue, nil))
	p.health.setReady(p.temporalAddr, status)
}

// downstreamStatus reports the downstream servers for /healthz: the
// worker's own connections, live, or else the front end's view of the
// workers' catalog.
func (p *process) downstreamStatus() func() map[string]string {
	switch {
	case p.manager != nil:
		return func() map[string]string { return managerStatus(p.manager) }
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
