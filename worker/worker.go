// Package worker wires durawait's Temporal workers: it registers the
// workflows and activities on their task queues and runs them.
package worker

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/activities/tmuxwatch"
	"github.com/durawait/durawait/workflows"
)

// Options configure the workers.
type Options struct {
	Client    client.Client
	TaskQueue string
	// Prober calls the downstream tools that wait_for probes.
	Prober activities.Prober
	// Downstream runs the re-exposed downstream tools and describes them;
	// its catalog is published on the task queue's catalog workflow.
	Downstream *activities.Downstream
	// Observer, when set, is told in process of what running waits observe.
	Observer activities.Observer
	// Agents, when set, runs agent CLIs on this host; its HostQueue gets a
	// worker of its own.
	Agents *activities.AgentRunner
	// TmuxQueue, when set, gets a worker that lists and watches this host's
	// tmux panes.
	TmuxQueue string
	// MaxConcurrentWaits caps the probe loops this worker runs at once;
	// each is a goroutine that mostly sleeps.
	MaxConcurrentWaits int
}

// DefaultMaxConcurrentWaits is the cap when Options leaves it zero.
const DefaultMaxConcurrentWaits = 20000

// Workers are durawait's running workers.
type Workers struct {
	workers []sdkworker.Worker
	closers []func() // run after the workers stop
}

// New returns the workers, every workflow and activity registered.
func New(opts Options) (*Workers, error) {
	if opts.Client == nil || opts.TaskQueue == "" || opts.Prober == nil || opts.Downstream == nil {
		return nil, errors.New("worker: client, task queue, prober and downstream are required")
	}
	if opts.MaxConcurrentWaits <= 0 {
		opts.MaxConcurrentWaits = DefaultMaxConcurrentWaits
	}
	main := sdkworker.New(opts.Client, opts.TaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: opts.MaxConcurrentWaits,
		// MaxHeartbeatThrottleInterval keeps the SDK's default: a probe
		// loop's progress (samples, last observation) lives in its
		// heartbeats, sent at most every 0.8 × the heartbeat timeout, so a
		// crash can lose that long a stretch of samples from the count.
		// Sending them more often would halve how many waits one engine
		// holds (docs/performance.md).
		//
		// WaitEndLogger writes each wait's "wait ended" line.
		Interceptors: []interceptor.WorkerInterceptor{&WaitEndLogger{}},
	})
	hosts := &activities.AgentHosts{Queues: opts.Client}
	if opts.Agents != nil {
		hosts.Own = workflows.AgentClaimQueue(opts.TaskQueue)
	}
	Register(main, opts.Prober, opts.Observer, opts.Agents, hosts)
	main.RegisterActivityWithOptions(opts.Downstream.CallDownstreamTool, activity.RegisterOptions{Name: workflows.CallDownstreamToolActivityName})
	ws := &Workers{workers: []sdkworker.Worker{main}}
	if opts.Agents != nil {
		host := sdkworker.New(opts.Client, opts.Agents.HostQueue, sdkworker.Options{
			MaxHeartbeatThrottleInterval: time.Second,
		})
		host.RegisterActivityWithOptions(opts.Agents.RunAgent, activity.RegisterOptions{Name: workflows.RunAgentActivityName})
		// The host claims of new invocations: only agent hosts poll this
		// queue (Register keeps the claim on the shared queue for the
		// invocations an earlier release scheduled there).
		claims := sdkworker.New(opts.Client, workflows.AgentClaimQueue(opts.TaskQueue), sdkworker.Options{})
		claims.RegisterActivityWithOptions(opts.Agents.ClaimAgentHost, activity.RegisterOptions{Name: workflows.ClaimAgentHostActivity})
		ws.workers = append(ws.workers, host, claims)
	}
	if opts.TmuxQueue != "" {
		// Pane watches are few and human-paced; frequent heartbeats let a
		// caller's cancel detach the control client within a fraction of a
		// second.
		tmux := sdkworker.New(opts.Client, opts.TmuxQueue, sdkworker.Options{
			MaxHeartbeatThrottleInterval: activities.PaneHeartbeatInterval,
		})
		watcher := &activities.PaneWatcher{Observer: opts.Observer, Clients: tmuxwatch.NewHub()}
		ws.closers = append(ws.closers, watcher.Clients.Close)
		tmux.RegisterActivityWithOptions(watcher.WatchPane, activity.RegisterOptions{Name: workflows.WatchPaneActivityName})
		tmux.RegisterActivityWithOptions(activities.ListPanes, activity.RegisterOptions{Name: workflows.ListPanesActivityName})
		ws.workers = append(ws.workers, tmux)
	}
	return ws, nil
}

// Start starts every worker.
func (w *Workers) Start() error {
	for i, wk := range w.workers {
		if err := wk.Start(); err != nil {
			for _, started := range w.workers[:i] {
				started.Stop()
			}
			return fmt.Errorf("start worker: %w", err)
		}
	}
	return nil
}

// Stop stops every worker, then detaches the tmux control clients they
// shared.
func (w *Workers) Stop() {
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

// Register puts durawait's workflows, the shared-queue activities and the
// workflows' local activities (hosts) on r under their durable names.
func Register(r Registry, prober activities.Prober, observer activities.Observer, agents *activities.AgentRunner, hosts *activities.AgentHosts) {
	workflows.RegisterWorkflows(r)
	r.RegisterActivityWithOptions(hosts.Polling, activity.RegisterOptions{Name: workflows.AgentHostsPollingActivity})
	poller := &activities.Poller{Prober: prober, Observer: observer}
	r.RegisterActivityWithOptions(poller.PollProbe, activity.RegisterOptions{Name: workflows.PollProbeActivityName})
	if agents != nil {
		r.RegisterActivityWithOptions(agents.ClaimAgentHost, activity.RegisterOptions{Name: workflows.ClaimAgentHostActivity})
	}
}
