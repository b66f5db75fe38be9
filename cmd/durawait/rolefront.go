package main

import (
	"context"
	"time"

	"github.com/durawait/durawait/internal/callevents"
	"github.com/durawait/durawait/mcpfront"
	"github.com/durawait/durawait/worker"
	"github.com/durawait/durawait/workflows"
)

// startFront builds the MCP front end and fills p.front. With a worker in
// the process it reaches the worker's side directly and reads the
// in-process feed; otherwise it reaches the workers through Temporal and
// polls their catalog.
func (p *process) startFront(ctx context.Context) (func(), error) {
	if !p.roles.front {
		return nil, nil
	}
	if p.temporal == nil {
		return nil, needs("startFront", "dialTemporal's client")
	}
	if p.roles.worker && p.worker == nil {
		return nil, needs("startFront", "startWorker's side (the process runs a worker)")
	}
	cfg := p.cfg
	var feed mcpfront.EventFeed
	var workers mcpfront.Workers = mcpfront.TemporalWorkers{Client: p.temporal, TaskQueue: cfg.TaskQueue}
	var host string
	var expectLoop func(workflowID, runID string)
	if p.roles.worker {
		feed = p.worker.hub
		workers = worker.Local{Downstream: p.worker.downstream}
		host = p.worker.host
		expectLoop = p.worker.hostRuntime.ExpectLoop
	}
	front := mcpfront.New(mcpfront.Options{
		Temporal:   p.temporal,
		Namespace:  cfg.Namespace,
		TaskQueue:  cfg.TaskQueue,
		Workers:    workers,
		Events:     feed,
		Host:       host,
		ExpectLoop: expectLoop,
		// What operators read of a wait_for's probe arguments.
		HideProbeArgValues: cfg.HideProbeArgValues,
		Agents: mcpfront.AgentOptions{
			Limits:     workflows.AgentLimits{Providers: cfg.Agents.ProviderNames(), AllowedRoots: cfg.Agents.AllowedRoots},
			WaitWindow: cfg.Agents.WaitWindow(),
			MaxRun:     cfg.Agents.MaxRun(),
			AnswerWait: cfg.Agents.AnswerWait(),
			CancelWait: cfg.Agents.CancelGrace() + 30*time.Second,
		},
		Tmux: mcpfront.TmuxOptions{
			ListPanes:   cfg.ToolEnabled(workflows.ToolListPanes),
			WaitForText: cfg.ToolEnabled(workflows.ToolWaitForText),
			Socket:      cfg.Tmux.Socket,
			MaxWait:     cfg.TmuxWaitMax(),
		},
		EventOptions: mcpfront.EventOptions{Retention: cfg.Events.Retention(), Shared: cfg.Events.Shared},
		CallEvents:   mcpfront.CallEventOptions{Hub: callevents.NewHub(0), ResultMaxLength: cfg.EventResultMaxLen},
		Logger:       p.logger.With("component", "mcpfront"),
		Version:      version,
		Telemetry:    p.frontTelemetry(),
	})
	p.front = front
	if p.roles.worker {
		p.worker.manager.OnChanged(func() { front.Refresh(ctx) })
		front.Refresh(ctx) // a change between New and the line above
		return nil, nil
	}
	return runInBackground(ctx, func(ctx context.Context) { front.WatchCatalog(ctx, catalogPollInterval) }), nil
}
