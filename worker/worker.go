// Package worker wires durawait's Temporal workers: it registers the
// workflows and activities on their task queues and runs them.
package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/activities/tmuxwatch"
	"github.com/durawait/durawait/worker/hosting"
	"github.com/durawait/durawait/workflows"
)

// Options configure the workers.
type Options struct {
	Client    client.Client
	Namespace string
	TaskQueue string
	// Prober calls the downstream tools that wait_for probes.
	Prober activities.Prober
	// Downstream runs the re-exposed downstream tools and describes them;
	// its catalog is published on the task queue's catalog workflow.
	Downstream *activities.Downstream
	// Observer, when set, is told in process of what running waits observe.
	Observer activities.Observer
	// Agents, when set, runs agent CLIs on this host: the worker takes
	// the agent hosts' claims.
	Agents *activities.AgentRunner
	// TmuxQueue, when set, gets a worker that lists this machine's tmux
	// panes and claims their watches.
	TmuxQueue string
	// Host, Instance, Machine, Lease, EndsDir and JournalDir are this worker's host
	// (see hosting.Options).
	Host, Instance, Machine string
	Lease                   time.Duration
	EndsDir                 string
	JournalDir              string
	Logger                  *slog.Logger
}

// Workers are durawait's running workers.
type Workers struct {
	workers []sdkworker.Worker
	host    *hosting.Runtime
	closers []func() // run after the workers stop
}

// New returns the workers, every workflow and activity registered.
func New(opts Options) (*Workers, error) {
	if opts.Client == nil || opts.TaskQueue == "" || opts.Prober == nil || opts.Downstream == nil {
		return nil, errors.New("worker: client, task queue, prober and downstream are required")
	}
	ws := &Workers{}
	var panes *activities.PaneWatcher
	if opts.TmuxQueue != "" {
		panes = &activities.PaneWatcher{Clients: tmuxwatch.NewHub(), Observer: opts.Observer, Logger: opts.Logger}
		ws.closers = append(ws.closers, panes.Clients.Close)
	}
	host, err := hosting.New(hosting.Options{
		Client: opts.Client, Namespace: opts.Namespace, TaskQueue: opts.TaskQueue,
		Host: opts.Host, Instance: opts.Instance, Machine: opts.Machine, TmuxQueue: opts.TmuxQueue, Lease: opts.Lease, EndsDir: opts.EndsDir, JournalDir: opts.JournalDir,
		Poller: &activities.Poller{Prober: opts.Prober, Observer: opts.Observer, Allowed: opts.Downstream.CheckProbe},
		Panes:  panes, Agents: opts.Agents, Observer: opts.Observer, Logger: opts.Logger,
	})
	if err != nil {
		return nil, err
	}
	ws.host = host

	main := sdkworker.New(opts.Client, opts.TaskQueue, sdkworker.Options{
		// WaitEndLogger writes each wait's "wait ended" line.
		Interceptors: []interceptor.WorkerInterceptor{&WaitEndLogger{}},
		// A wait's next workflow task waits this long (not the SDK's 5 s)
		// for a worker that died with its cache before another worker
		// takes it: the answer of a wait whose host was adopted.
		StickyScheduleToStartTimeout: stickyTimeout,
	})
	Register(main, host, &activities.AgentHosts{Queues: opts.Client, Own: ownClaimQueue(opts)})
	main.RegisterActivityWithOptions(opts.Downstream.CallDownstreamTool, activity.RegisterOptions{Name: workflows.CallDownstreamToolActivityName})
	ws.workers = append(ws.workers, main)
	if opts.Agents != nil {
		// The host claims of new invocations: only agent hosts poll this
		// queue.
		claims := sdkworker.New(opts.Client, workflows.AgentClaimQueue(opts.TaskQueue), sdkworker.Options{})
		claims.RegisterActivityWithOptions(host.ClaimAgentHost, activity.RegisterOptions{Name: workflows.ClaimAgentHostActivity})
		ws.workers = append(ws.workers, claims)
	}
	if opts.TmuxQueue != "" {
		tmux := sdkworker.New(opts.Client, opts.TmuxQueue, sdkworker.Options{})
		tmux.RegisterActivityWithOptions(host.ClaimPaneHost, activity.RegisterOptions{Name: workflows.ClaimPaneHostActivityName})
		tmux.RegisterActivityWithOptions(activities.ListPanes, activity.RegisterOptions{Name: workflows.ListPanesActivityName})
		ws.workers = append(ws.workers, tmux)
	}
	return ws, nil
}

// stickyTimeout is the main worker's sticky schedule-to-start timeout.
const stickyTimeout = 2 * time.Second

// ownClaimQueue is the agent hosts' claim queue when this worker is an
// agent host ("" otherwise): it counts itself as polling it.
func ownClaimQueue(opts Options) string {
	if opts.Agents == nil {
		return ""
	}
	return workflows.AgentClaimQueue(opts.TaskQueue)
}

// Host is the worker's host.
func (w *Workers) Host() *hosting.Runtime { return w.host }

// Start starts every worker, the host last: its lease resumes its waits,
// whose workflows need the workers up.
func (w *Workers) Start() error {
	for i, wk := range w.workers {
		if err := wk.Start(); err != nil {
			for _, started := range w.workers[:i] {
				started.Stop()
			}
			return fmt.Errorf("start worker: %w", err)
		}
	}
	if err := w.host.Start(); err != nil {
		for _, started := range w.workers {
			started.Stop()
		}
		return err
	}
	return nil
}

// Stop stops the host (its loops are dropped for the next holder; agent
// CLIs run on), then every worker, then detaches the tmux control clients
// they shared.
func (w *Workers) Stop() {
	w.host.Stop()
	for _, wk := range w.workers {
		wk.Stop()
	}
	for _, c := range w.closers {
		c()
	}
}

// Registry is where workflows and activities are registered: a worker or
// the Temporal test environment.
type Registry interface {
	RegisterWorkflowWithOptions(any, workflow.RegisterOptions)
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}

// Register puts durawait's workflows and their local activities (the
// host's PickHost, the agent hosts' look) on r under their durable names.
func Register(r Registry, host *hosting.Runtime, hosts *activities.AgentHosts) {
	workflows.RegisterWorkflows(r)
	r.RegisterActivityWithOptions(hosts.Polling, activity.RegisterOptions{Name: workflows.AgentHostsPollingActivity})
	r.RegisterActivityWithOptions(host.PickHost, activity.RegisterOptions{Name: workflows.PickHostActivityName})
	r.RegisterActivityWithOptions(host.SubscribeEvent, activity.RegisterOptions{Name: workflows.SubscribeEventActivityName})
}
