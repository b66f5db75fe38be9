// Package hosting runs a worker's host: the loops of the waits given to
// it (probe loops, pane watches, agent runs), and the lease that proves,
// once for all of them, that it is alive (docs/hosts.md).
//
// A loop is one activity on its host's queue, started and then answered
// by ID when it ends (see workflows/loops.go): no heartbeat, no attempt
// per stretch of time. The host's lease (workflows.HostLease) is the one
// thing that heartbeats. When this worker holds a host's lease (its own,
// or one it adopted from a lost host of its group), it polls that host's
// queue and resumes the host's running waits it finds in Temporal's
// visibility (DurawaitHost); when it loses or releases an adopted host, it
// drops that host's loops for the next holder.
package hosting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/workflows"
)

// Options configure a worker's host.
type Options struct {
	Client    client.Client
	Namespace string
	// TaskQueue is the queue the workflows run on; the host, instance and
	// adoption queues are named after it.
	TaskQueue string
	// Host is this worker's own host: stable across its restarts, one
	// worker at a time (its data dir's).
	Host string
	// Instance names this process, new at each start.
	Instance string
	// Machine is the machine this worker runs on: the workers of a
	// machine adopt each other's hosts first (workflows.AdoptQueue).
	Machine string
	// TmuxQueue is the queue of the tmux host this worker watches panes
	// of ("": none).
	TmuxQueue string
	// Lease is how long this worker may go unheard before its waits move;
	// workflows.DefaultHostLease when zero.
	Lease time.Duration
	// EndsDir is the folder where loop ends wait for Temporal to record
	// them, for the host's next start (a folder of the data dir,
	// EndsFolder); "" keeps them in memory only.
	EndsDir string
	// JournalDir is the folder where the own host's running loops are
	// journaled, for its next start to resume them at once (a folder of
	// the data dir, JournalFolder); "" journals none (a restart resumes
	// them from Temporal's visibility and histories).
	JournalDir string
	// SweepInterval is how often a held host's waits are looked up again
	// (a wait whose loop no holder runs yet, a wait that closed without
	// its stop reaching the loop); DefaultSweepInterval when zero.
	SweepInterval time.Duration

	// Poller runs the probe loops.
	Poller *activities.Poller
	// Panes watches tmux panes; nil when this worker runs no tmux tools.
	Panes *activities.PaneWatcher
	// Agents runs agent CLIs; nil when this worker runs no agents.
	Agents *activities.AgentRunner
	// Observer, when set, is told each loop's outcome once Temporal has
	// recorded it.
	Observer activities.Observer
	Logger   *slog.Logger
}

// DefaultSweepInterval is Options.SweepInterval when zero.
const DefaultSweepInterval = 30 * time.Second

// Runtime is a worker's host: its loops and its leases.
type Runtime struct {
	opts   Options
	logger *slog.Logger
	loops  *loops

	// ctx ends when the runtime stops.
	ctx    context.Context
	cancel context.CancelFunc
	// workers are the SDK workers of the instance and adoption queues.
	workers []sdkworker.Worker

	mu sync.Mutex
	// held are the leases this worker holds, by host.
	held map[string]*heldLease
	// queues are the SDK workers of the host queues this worker polls, by
	// host: its own always, an adopted one while it holds it.
	queues map[string]sdkworker.Worker
	// holdingOwn says this worker holds its own host's lease now.
	holdingOwn bool
	wg         sync.WaitGroup
	// progress is each probe loop's latest progress, by loopKey (what an
	// operator's look reads: ProbeState).
	progress sync.Map
	// wakes is each probe loop's wake-up channel, by loopKey (WakeLoop).
	wakes sync.Map
	// spoolsPruned is when pruneSpools last looked (under mu).
	spoolsPruned time.Time
}

// New returns the host of a worker; Start runs it.
func New(opts Options) (*Runtime, error) {
	if opts.Client == nil || opts.TaskQueue == "" || opts.Host == "" || opts.Instance == "" || opts.Machine == "" || opts.Poller == nil {
		return nil, errors.New("hosting: client, task queue, host, instance, machine and poller are required")
	}
	if opts.Lease <= 0 {
		opts.Lease = workflows.DefaultHostLease
	}
	if opts.SweepInterval <= 0 {
		opts.SweepInterval = DefaultSweepInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	logger := opts.Logger.With("host", opts.Host)
	files, err := newEndFiles(opts.EndsDir)
	if err != nil {
		return nil, err
	}
	journal, err := newLoopJournal(opts.JournalDir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runtime{
		opts: opts, logger: logger, ctx: ctx, cancel: cancel,
		loops:  newLoops(opts.Namespace, opts.Client, opts.Observer, files, journal, logger),
		held:   map[string]*heldLease{},
		queues: map[string]sdkworker.Worker{},
	}
	r.loops.confirmNow = r.confirmNow
	return r, nil
}

// Host is this worker's own host.
func (r *Runtime) Host() string { return r.opts.Host }

// Start polls this worker's queues, resumes its own host's waits and
// tells the host's lease workflow that the host is online; the lease
// arrives on the instance queue.
func (r *Runtime) Start() error {
	instance := sdkworker.New(r.opts.Client, workflows.InstanceQueue(r.opts.TaskQueue, r.opts.Instance), sdkworker.Options{})
	instance.RegisterActivityWithOptions(r.HoldLease, activity.RegisterOptions{Name: workflows.HoldLeaseActivityName})
	// The host lease workflows: every worker runs them, with the
	// shortest stickiness, so a lease's next step after its holder's death
	// waits at most a second for that worker's cache.
	leases := sdkworker.New(r.opts.Client, workflows.LeaseQueue(r.opts.TaskQueue), sdkworker.Options{StickyScheduleToStartTimeout: time.Second})
	leases.RegisterWorkflowWithOptions(workflows.HostLease, workflow.RegisterOptions{Name: workflows.HostLeaseWorkflowName})
	// A lease an earlier release started runs on under its old type,
	// until it continues as new under the new one.
	leases.RegisterWorkflowWithOptions(workflows.HostLease, workflow.RegisterOptions{Name: workflows.LegacyHostLeaseWorkflowName})
	workers := []sdkworker.Worker{leases, instance}
	for _, machine := range []string{r.opts.Machine, workflows.AnyMachine} {
		adopt := sdkworker.New(r.opts.Client, workflows.AdoptQueue(r.opts.TaskQueue, machine), sdkworker.Options{})
		adopt.RegisterActivityWithOptions(r.AdoptHost, activity.RegisterOptions{Name: workflows.AdoptHostActivityName})
		workers = append(workers, adopt)
	}
	for _, w := range workers {
		if err := w.Start(); err != nil {
			r.stopWorkers()
			return fmt.Errorf("start the host's worker: %w", err)
		}
		r.workers = append(r.workers, w)
	}
	// The own host's waits are resumed from now, not from the grant of
	// its lease: after a crash, the lease's grant is a few engine round
	// trips that a restarted engine, busy with its backlog, may take
	// seconds to make. Its loops are this worker's whatever its lease says
	// (see lost), and one that another holder runs too does no harm. Those
	// in its journal are resumed first, before its queue delivers anything.
	since := time.Now()
	r.resumeJournal()
	if err := r.pollHost(r.opts.Host); err != nil {
		// The loops resumed from the journal stay journaled for the next
		// start.
		r.cancel()
		r.loops.drop("", errStopping)
		r.wg.Wait()
		r.stopWorkers()
		return err
	}
	r.wg.Go(func() { r.sweeps(r.ctx, sweepTarget{host: r.opts.Host, own: true, since: since}) })
	r.wg.Go(r.stayOnline)
	return nil
}

// Stop drops every loop (an agent's CLI runs on), releases the leases this
// worker holds, so that another worker of the group takes its hosts at
// once, and stops polling.
func (r *Runtime) Stop() {
	r.cancel()
	// No new loop first (a loop delivered now would start a CLI only to
	// drop it), then the loops, then the leases.
	r.mu.Lock()
	queues := r.queues
	r.queues = map[string]sdkworker.Worker{}
	r.mu.Unlock()
	for _, w := range queues {
		w.Stop()
	}
	r.loops.drop("", errStopping)
	r.mu.Lock()
	held := make([]*heldLease, 0, len(r.held))
	for _, l := range r.held {
		held = append(held, l)
	}
	r.mu.Unlock()
	for _, l := range held {
		r.release(l)
	}
	r.wg.Wait()
	r.stopWorkers()
}

func (r *Runtime) stopWorkers() {
	for _, w := range r.workers {
		w.Stop()
	}
	r.workers = nil
}

// pollHost starts polling host's queue, with every activity a loop of
// this worker's kinds needs.
func (r *Runtime) pollHost(host string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.queues[host]; ok {
		return nil
	}
	w := sdkworker.New(r.opts.Client, workflows.HostQueue(r.opts.TaskQueue, host), sdkworker.Options{})
	w.RegisterActivityWithOptions(r.PollProbe, activity.RegisterOptions{Name: workflows.PollProbeActivityName})
	w.RegisterActivityWithOptions(r.WatchPane, activity.RegisterOptions{Name: workflows.WatchPaneActivityName})
	w.RegisterActivityWithOptions(r.RunAgent, activity.RegisterOptions{Name: workflows.RunAgentActivityName})
	w.RegisterActivityWithOptions(r.StopLoop, activity.RegisterOptions{Name: workflows.StopLoopActivityName})
	w.RegisterActivityWithOptions(r.AnswerAgent, activity.RegisterOptions{Name: workflows.AnswerAgentActivityName})
	w.RegisterActivityWithOptions(r.AgentLive, activity.RegisterOptions{Name: workflows.AgentLiveActivityName})
	w.RegisterActivityWithOptions(r.ProbeState, activity.RegisterOptions{Name: workflows.ProbeStateActivityName})
	w.RegisterActivityWithOptions(r.WakeLoop, activity.RegisterOptions{Name: workflows.WakeLoopActivityName})
	w.RegisterActivityWithOptions(r.LoopAnswer, activity.RegisterOptions{Name: workflows.LoopAnswerActivityName})
	if err := w.Start(); err != nil {
		return fmt.Errorf("poll the queue of host %s: %w", host, err)
	}
	r.queues[host] = w
	return nil
}

// unpollHost stops polling an adopted host's queue.
func (r *Runtime) unpollHost(host string) {
	r.mu.Lock()
	if r.held[host] != nil {
		// A new grant of the host came meanwhile: its queue stays polled.
		r.mu.Unlock()
		return
	}
	w, ok := r.queues[host]
	delete(r.queues, host)
	r.mu.Unlock()
	if ok {
		w.Stop()
	}
}

// hostOfQueue is the host whose queue is queue.
func (r *Runtime) hostOfQueue(queue string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for host := range r.queues {
		if workflows.HostQueue(r.opts.TaskQueue, host) == queue {
			return host
		}
	}
	return r.opts.Host
}

// isCanceled reports whether err is a cancellation (a heartbeat's answer
// that the activity's cancel was requested).
func isCanceled(err error) bool {
	var canceled *temporal.CanceledError
	return errors.As(err, &canceled)
}

// sleepCtx waits d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
