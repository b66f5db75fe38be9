// Package worker wires durawait's Temporal worker: it registers the
// workflows and activities on a task queue and runs them.
package worker

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/workflows"
)

// Options configure a worker.
type Options struct {
	Client    client.Client
	TaskQueue string
	// Prober calls the downstream tools that wait_for probes.
	Prober activities.Prober
	// Observer, when set, is told of every sample.
	Observer activities.SampleObserver
	// MaxConcurrentWaits caps the probe loops this worker runs at once;
	// each is a goroutine that mostly sleeps.
	MaxConcurrentWaits int
}

// DefaultMaxConcurrentWaits is the cap when Options leaves it zero.
const DefaultMaxConcurrentWaits = 20000

// New returns a worker with every workflow and activity registered. Start it
// with Start, stop it with Stop.
func New(opts Options) (sdkworker.Worker, error) {
	if opts.Client == nil || opts.TaskQueue == "" || opts.Prober == nil {
		return nil, fmt.Errorf("worker: client, task queue and prober are required")
	}
	if opts.MaxConcurrentWaits <= 0 {
		opts.MaxConcurrentWaits = DefaultMaxConcurrentWaits
	}
	w := sdkworker.New(opts.Client, opts.TaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: opts.MaxConcurrentWaits,
		// A probe loop's progress (samples, last observation) lives in its
		// heartbeats; sending them at least every second bounds what a crash
		// can lose to the last second of samples.
		MaxHeartbeatThrottleInterval: time.Second,
	})
	Register(w, opts.Prober, opts.Observer)
	return w, nil
}

// Register puts durawait's workflows and activities on r under their
// durable names. Tests use it with the Temporal test environment.
func Register(r interface {
	RegisterWorkflowWithOptions(any, workflow.RegisterOptions)
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}, prober activities.Prober, observer activities.SampleObserver) {
	r.RegisterWorkflowWithOptions(workflows.WaitFor, workflow.RegisterOptions{Name: workflows.WaitForWorkflowName})
	poller := &activities.Poller{Prober: prober, Observer: observer}
	r.RegisterActivityWithOptions(poller.PollProbe, activity.RegisterOptions{Name: workflows.PollProbeActivityName})
}
