package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/internal/datadir"
	"github.com/durawait/durawait/internal/engine"
	"github.com/durawait/durawait/internal/samplehub"
	"github.com/durawait/durawait/mcpfront"
	"github.com/durawait/durawait/worker"
	"github.com/durawait/durawait/worker/downstream"
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
func runRoles(ctx context.Context, name string, r roles, cfg config.Config, stdin io.Reader, stdout, stderr io.Writer) error {
	level, _ := cfg.SlogLevel()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if cfg.Temporal != "" {
		r.engine = false
	} else if !r.engine {
		return fmt.Errorf("durawait %s needs --temporal HOST:PORT (only serve embeds an engine)", name)
	}

	if r.daemon {
		cfg = daemonConfig(cfg, logger)
	}
	if r.front {
		if err := cfg.CheckMCPAuth(); err != nil {
			return fmt.Errorf("configuration: %w", err)
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()

	// Claim the HTTP address first, so /healthz answers (503) while the
	// rest starts and a port conflict is reported at once.
	health := &healthState{}
	var httpServer *http.Server
	var mux *http.ServeMux
	var mcpURL string
	shutdownHTTP := func() {}
	if !cfg.Stdio && cfg.HTTP != "" {
		ln, err := net.Listen("tcp", cfg.HTTP)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", cfg.HTTP, err)
		}
		mux = http.NewServeMux()
		mux.Handle("GET /healthz", health)
		// Reading a request (headers and body) is bounded; writing is not,
		// so a 300 s wait's stream is never cut. Idle keep-alive
		// connections are closed after two minutes.
		readTimeout := time.Duration(cfg.HTTPReadTimeoutSec) * time.Second
		httpServer = &http.Server{Handler: mux, ReadHeaderTimeout: min(10*time.Second, readTimeout),
			ReadTimeout: readTimeout, IdleTimeout: 2 * time.Minute}
		go func() {
			if err := httpServer.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("HTTP server stopped", "error", err)
				cancel()
			}
		}()
		shutdownHTTP = sync.OnceFunc(func() {
			sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer scancel()
			_ = httpServer.Shutdown(sctx)
		})
		cleanups = append(cleanups, shutdownHTTP)
		mcpURL = "http://" + ln.Addr().String() + "/mcp"
		logger.Info("listening", "http", "http://"+ln.Addr().String())
	}

	temporalAddr := cfg.Temporal
	if r.engine {
		owner := datadir.Owner{PID: os.Getpid(), HTTP: mcpURL, StartedAt: time.Now().UTC()}
		if r.daemon {
			owner.Log = datadir.LogPath(cfg.DataDir)
		}
		lock, err := datadir.Acquire(cfg.DataDir, owner)
		if err != nil {
			return err
		}
		cleanups = append(cleanups, lock.Release)
		eng, err := engine.Start(engine.Options{
			DataDir:   cfg.DataDir,
			Port:      cfg.EnginePort,
			UIPort:    cfg.UIPort,
			Namespace: cfg.Namespace,
			Logger:    logger,
			LogLevel:  max(level, slog.LevelWarn),
		})
		if err != nil {
			return explainEngineStart(err)
		}
		cleanups = append(cleanups, eng.Stop)
		temporalAddr = eng.Addr()
		owner.Engine = temporalAddr
		if eng.UIAddr() != "" {
			owner.UI = "http://" + eng.UIAddr()
		}
		if err := lock.Update(owner); err != nil {
			return err
		}
		logger.Info("embedded Temporal engine started", "addr", temporalAddr, "ui", uiURL(eng.UIAddr()), "data_dir", cfg.DataDir)
	}

	tc, err := client.DialContext(ctx, client.Options{
		HostPort:  temporalAddr,
		Namespace: cfg.Namespace,
		Logger:    sdklog.NewStructuredLogger(logger.With("component", "temporal-sdk")),
	})
	if err != nil {
		return fmt.Errorf("connect to Temporal at %s: %w", temporalAddr, err)
	}
	cleanups = append(cleanups, tc.Close)

	hub := samplehub.New()
	// A worker's side of the re-exposed tools and of the tmux tools; a
	// front end without a worker in its process starts no downstream
	// server and runs no tmux.
	var manager *downstream.Manager
	var workerSide *activities.Downstream
	var downstreamStatus func() map[string]string
	if r.worker {
		manager = downstream.NewManager(serverConfigs(cfg), downstream.Options{}, logger.With("component", "downstream"))
		var managerDone sync.WaitGroup
		managerCtx, stopManager := context.WithCancel(context.Background())
		managerDone.Go(func() { manager.Run(managerCtx) })
		cleanups = append(cleanups, func() { stopManager(); managerDone.Wait() })
		readyCtx, readyCancel := context.WithTimeout(ctx, 30*time.Second)
		_ = manager.WaitReady(readyCtx)
		readyCancel()
		downstreamStatus = func() map[string]string { return managerStatus(manager) }

		var tmuxQueue string
		if cfg.ToolEnabled("list_panes") || cfg.ToolEnabled("wait_for_text") {
			tmuxQueue = tmuxHostQueue(cfg)
		}
		workerSide = &activities.Downstream{Servers: manager, ProbeTools: probeTools(cfg), TmuxHostQueue: tmuxQueue}

		runner, err := agentRunner(cfg, tc, logger)
		if err != nil {
			return err
		}
		if runner != nil {
			runner.Observer = hub
		}
		w, err := worker.New(worker.Options{
			Client: tc, TaskQueue: cfg.TaskQueue, Prober: manager, Downstream: workerSide, Observer: hub, Agents: runner, TmuxQueue: tmuxQueue,
		})
		if err != nil {
			return err
		}
		if err := w.Start(); err != nil {
			return err
		}
		cleanups = append(cleanups, w.Stop)

		publisher := worker.NewCatalogPublisher(tc, cfg.TaskQueue, workerSide.Catalog, logger.With("component", "catalog"))
		manager.OnToolsChanged(publisher.Changed)
		var publisherDone sync.WaitGroup
		publisherCtx, stopPublisher := context.WithCancel(ctx)
		publisherDone.Go(func() { publisher.Run(publisherCtx) })
		cleanups = append(cleanups, func() { stopPublisher(); publisherDone.Wait() })
	}

	if !r.front {
		health.setReady(temporalAddr, downstreamStatus)
		<-ctx.Done()
		return nil
	}
	var feed mcpfront.EventFeed
	var workers mcpfront.Workers = mcpfront.TemporalWorkers{Client: tc, TaskQueue: cfg.TaskQueue}
	if r.worker {
		feed = hub
		workers = worker.Local{Downstream: workerSide}
	}
	front := mcpfront.New(mcpfront.Options{
		Temporal:         tc,
		Namespace:        cfg.Namespace,
		TaskQueue:        cfg.TaskQueue,
		Workers:          workers,
		Events:           feed,
		HeartbeatTimeout: cfg.HeartbeatTimeout(),
		Agents: mcpfront.AgentOptions{
			Limits:     workflows.AgentLimits{Providers: cfg.Agents.ProviderNames(), AllowedRoots: cfg.Agents.AllowedRoots},
			WaitWindow: cfg.Agents.WaitWindow(),
			MaxRun:     cfg.Agents.MaxRun(),
			CancelWait: cfg.Agents.CancelGrace() + 30*time.Second,
		},
		Tmux: mcpfront.TmuxOptions{
			ListPanes:   cfg.ToolEnabled("list_panes"),
			WaitForText: cfg.ToolEnabled("wait_for_text"),
			Socket:      cfg.Tmux.Socket,
			MaxWait:     cfg.TmuxWaitMax(),
		},
		Logger:  logger.With("component", "mcpfront"),
		Version: version,
	})
	if r.worker {
		manager.OnToolsChanged(front.Refresh)
		front.Refresh() // a change between New and the line above
	} else {
		go front.WatchCatalog(ctx, catalogPollInterval)
	}
	downstreamStatus = front.DownstreamStatus

	if cfg.Stdio {
		logger.Info("serving MCP on stdio")
		health.setReady(temporalAddr, downstreamStatus)
		// A signal drains the calls first (they answer "call again"), then
		// ends the session.
		serveCtx, endServe := context.WithCancel(context.WithoutCancel(ctx))
		defer endServe()
		go func() {
			select {
			case <-ctx.Done():
				drainFront(front, logger)
				endServe()
			case <-serveCtx.Done():
			}
		}()
		return front.ServeStdio(serveCtx, stdin, stdout)
	}
	var ownDataDir string
	if r.engine {
		ownDataDir = cfg.DataDir
	}
	authenticate, err := httpAuth(ctx, cfg, ownDataDir, logger)
	if err != nil {
		return err
	}
	var mcpHandler http.Handler = front.HTTPHandlerWith("/mcp", mcpfront.HTTPOptions{
		Loopback:       cfg.HTTPLoopback(),
		AllowedOrigins: cfg.AllowedOrigins,
		Authenticate:   authenticate,
	})
	if r.daemon && cfg.DaemonIdleExitMin > 0 {
		idle := &activity{}
		mcpHandler = idle.wrap(mcpHandler)
		go watchIdle(ctx, idle, time.Duration(cfg.DaemonIdleExitMin)*time.Minute, runningWaits(tc, cfg.Namespace), logger, cancel)
	}
	mux.Handle("/mcp", mcpHandler)
	health.setReady(temporalAddr, downstreamStatus)
	logger.Info("durawait ready", "mcp", mcpURL)
	<-ctx.Done()
	logger.Info("shutting down")
	// Answer the calls in flight, then close the listener; the deferred
	// cleanups stop the worker and close the Temporal client after that.
	drainFront(front, logger)
	shutdownHTTP()
	return nil
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

// agentRunner builds the runner of agent CLIs on this host, or nil when no
// provider is configured.
func agentRunner(cfg config.Config, tc client.Client, logger *slog.Logger) (*activities.AgentRunner, error) {
	if len(cfg.Agents.Providers) == 0 {
		return nil, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the durawait executable (the agent supervisor): %w", err)
	}
	spool, err := filepath.Abs(filepath.Join(cfg.DataDir, "agents"))
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(spool))
	return &activities.AgentRunner{
		Providers:    agentProviders(cfg.Agents),
		AllowedRoots: cfg.Agents.AllowedRoots,
		SpoolDir:     spool,
		// One queue per host and spool: the run's output lives on this disk.
		HostQueue:   fmt.Sprintf("durawait-agents-%s-%s", host, hex.EncodeToString(sum[:4])),
		Supervisor:  []string{self, "agent-supervise"},
		Signals:     tc,
		CancelGrace: cfg.Agents.CancelGrace(),
		Logger:      logger.With("component", "agents"),
	}, nil
}

// agentProviders maps the configured providers, presets applied, onto the
// runner's options.
func agentProviders(agents config.Agents) map[string]activities.AgentProvider {
	resolved := agents.ResolvedProviders()
	out := make(map[string]activities.AgentProvider, len(resolved))
	for name, p := range resolved {
		out[name] = activities.AgentProvider{Format: p.Format, Command: p.Command, Resume: p.Resume, Model: p.Model, Env: p.Env}
	}
	return out
}

// catalogPollInterval is how often a front end with no worker in its
// process reads the workers' downstream catalog.
const catalogPollInterval = 3 * time.Second

// tmuxHostQueue is the task queue of this worker's tmux tools: a tmux
// server is local to its host, named by tmux.host (default: the hostname).
func tmuxHostQueue(cfg config.Config) string {
	host := cfg.Tmux.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	return "durawait-tmux-" + host
}

// managerStatus reports each of m's servers as "connected" or
// "unavailable: <last connection error>".
func managerStatus(m *downstream.Manager) map[string]string {
	servers := map[string]string{}
	for _, name := range m.ServerNames() {
		if _, _, err := m.ServerTools(name); err != nil {
			servers[name] = "unavailable: " + err.Error()
		} else {
			servers[name] = "connected"
		}
	}
	return servers
}

func uiURL(addr string) string {
	if addr == "" {
		return "disabled"
	}
	return "http://" + addr
}

func serverConfigs(cfg config.Config) []downstream.ServerConfig {
	out := make([]downstream.ServerConfig, len(cfg.MCPServers))
	for i, s := range cfg.MCPServers {
		out[i] = downstream.ServerConfig{
			Name: s.Name, Command: s.Command, Env: s.Env, URL: s.URL,
			Inherit:   downstream.Inherit{All: s.InheritEnv.All, Names: s.InheritEnv.Names},
			Transport: s.Transport, Expose: s.Exposed(),
		}
	}
	return out
}

// probeTools are each server's probe_tools, which the worker publishes
// with its catalog.
func probeTools(cfg config.Config) map[string][]string {
	p := map[string][]string{}
	for _, s := range cfg.MCPServers {
		if len(s.ProbeTools) > 0 {
			p[s.Name] = s.ProbeTools
		}
	}
	return p
}

// healthState answers /healthz: 503 while starting, then 200 with a short
// status report.
type healthState struct {
	ready  atomic.Bool
	engine string
	// downstream reports each downstream server's state; nil reports none.
	downstream func() map[string]string
}

func (h *healthState) setReady(engine string, downstream func() map[string]string) {
	h.engine = engine
	h.downstream = downstream
	h.ready.Store(true)
}

func (h *healthState) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if !h.ready.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":"starting"}` + "\n"))
		return
	}
	servers := map[string]string{}
	if h.downstream != nil {
		servers = h.downstream()
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"status": "ok", "temporal": h.engine, "downstream": servers,
	})
}
