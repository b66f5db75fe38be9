package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/internal/datadir"
	"github.com/durawait/durawait/internal/samplehub"
	"github.com/durawait/durawait/worker"
	"github.com/durawait/durawait/worker/downstream"
	"github.com/durawait/durawait/worker/hosting"
)

// workerSide is what startWorker fills: the worker's side of a process,
// which a front end in the same process reaches directly.
type workerSide struct {
	// host is the worker's host (its waits' loops run there).
	host string
	// hostRuntime runs the host's loops.
	hostRuntime *hosting.Runtime
	manager     *downstream.Manager
	downstream  *activities.Downstream
	// hub is the in-process feed of what the activities observe.
	hub *samplehub.Hub
}

// workflowCacheSize is how many workflows a worker keeps in memory
// between their tasks (the SDK's default is 10,000).
const workflowCacheSize = 100

// downstreamReadyTimeout bounds how long a worker waits for its
// downstream servers to connect before it starts anyway.
const downstreamReadyTimeout = 30 * time.Second

// startWorker starts the worker's side: the downstream servers, the
// workers (probe loops, agents, tmux) and the catalog publisher; it fills
// p.worker. A front end without a worker in its process starts no
// downstream server and runs no tmux.
func (p *process) startWorker(ctx context.Context) (func(), error) {
	if !p.roles.worker {
		return nil, nil
	}
	if p.temporal == nil {
		return nil, needs("startWorker", "dialTemporal's client")
	}
	var started stops
	side, err := p.startWorkerSide(ctx, &started)
	if err != nil {
		started.run()
		return nil, err
	}
	p.worker = side
	return started.run, nil
}

// startWorkerSide starts the worker's parts in order, adding what stops
// each to started.
func (p *process) startWorkerSide(ctx context.Context, started *stops) (*workerSide, error) {
	cfg, logger := p.cfg, p.logger
	side := &workerSide{manager: connectDownstream(ctx, cfg, p.roles.front, logger, started)}
	tmuxQueue := tmuxQueueOf(cfg)
	side.downstream = &activities.Downstream{Servers: side.manager, ProbeTools: probeTools(cfg), TmuxHostQueue: tmuxQueue}
	side.hub = samplehub.New()

	host, release, err := takeHost(cfg)
	if err != nil {
		return nil, err
	}
	started.add(release)
	side.host = host
	runner, err := agentRunner(cfg, p.temporal, host, logger)
	if err != nil {
		return nil, err
	}
	if runner != nil {
		runner.Observer = side.hub
	}
	// Waits of the same probe on this worker share its calls (one per tick).
	prober := activities.NewSharedProber(side.manager)
	// A wait's workflow runs a task at its start and at its end, and
	// sleeps between: the SDK keeps the workflows it ran last in memory
	// (a goroutine and its state each), the others are replayed from their
	// few events when their next task comes. The cache is the process's,
	// made by the first worker: with an embedded engine, the engine's own
	// (see startEngine); else these.
	sdkworker.SetStickyWorkflowCacheSize(workflowCacheSize)
	w, err := worker.New(worker.Options{
		Client: p.temporal, Namespace: cfg.Namespace, TaskQueue: cfg.TaskQueue, Prober: prober, Downstream: side.downstream,
		Observer: p.observer(side.hub), Agents: runner, TmuxQueue: tmuxQueue,
		Host: host, Instance: newInstance(host), Machine: queueSafe(machineName()), Lease: cfg.HostLease(),
		EndsDir: filepath.Join(cfg.DataDir, hosting.EndsFolder), JournalDir: filepath.Join(cfg.DataDir, hosting.JournalFolder),
		Logger: logger.With("component", "host"),
	})
	if err == nil {
		err = w.Start()
	}
	if err != nil {
		return nil, err
	}
	started.add(w.Stop)
	side.hostRuntime = w.Host()

	publisher := worker.NewCatalogPublisher(p.temporal, cfg.TaskQueue, side.downstream.Catalog, logger.With("component", "catalog"))
	side.manager.OnChanged(publisher.Changed)
	started.add(runInBackground(ctx, publisher.Run))
	return side, nil
}

// connectDownstream starts the manager of the configured downstream
// servers, adding its stop to started, and waits (bounded) for them to
// connect.
func connectDownstream(ctx context.Context, cfg config.Config, front bool, logger *slog.Logger, started *stops) *downstream.Manager {
	local := cfg.LocalProbesOn(front)
	switch {
	case local && !cfg.Stdio && front && cfg.Local.Enabled != nil:
		logger.Info("the built-in probes (local) answer every caller of this front end", "http", cfg.HTTP, "hosts", cfg.Local.Hosts, "paths", cfg.Local.Paths)
	case !local && cfg.Local.Enabled == nil:
		logger.Info("the built-in probes (local) are off: callers of this worker's waits may come from other machines; local.enabled = true turns them on")
	}
	manager := downstream.NewManager(serverConfigs(cfg, local), downstream.Options{}, logger.With("component", "downstream"))
	started.add(runInBackground(context.Background(), manager.Run))
	readyCtx, readyCancel := context.WithTimeout(ctx, downstreamReadyTimeout)
	_ = manager.WaitReady(readyCtx)
	readyCancel()
	return manager
}

// takeHost is this worker's host, held through the data dir's host lock
// (one worker per data dir) until release.
func takeHost(cfg config.Config) (host string, release func(), err error) {
	host, err = hostID(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("host: %w", err)
	}
	lock, err := datadir.AcquireHost(cfg.DataDir)
	if err != nil {
		return "", nil, err
	}
	return host, lock.Release, nil
}
