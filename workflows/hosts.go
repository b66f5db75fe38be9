package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Hosts and their leases (docs/hosts.md).
//
// A host is one durawait worker's identity: a name stable across restarts
// of the same worker (its data dir), with a task queue of its own
// (HostQueue) on which every long-running side effect of the waits it was
// given runs: the probe loops, pane watches and agent runs, and the
// requests that reach them (StopLoop, AgentLive). Those activities have no
// heartbeat: a host proves it is alive once for everything it holds, by a
// lease (the HostLease workflow, one per host), whose holder runs one
// heartbeating activity (HoldLease) whatever the number of waits.
//
// Normally a host's own process holds its lease. When the lease lapses
// (the holder went silent for longer than the lease), a live worker adopts
// it (AdoptQueue: one on the host's machine first, any worker after
// sameMachineOffer): it polls the host's queue and resumes the host's
// waits that it can run (every probe loop; pane watches and agent runs
// only on the host's machine, see hosting). When the host's own process
// comes back, the adopter releases the host and the owner takes it back.

// Names of the host lease workflow, its activities and its signal.
const (
	HostLeaseWorkflowName = InternalTypePrefix + "HostLease"
	// HoldLeaseActivityName is the lease itself: scheduled on the holder's
	// instance queue, it heartbeats while the holder lives.
	HoldLeaseActivityName = "HoldHostLease"
	// AdoptHostActivityName asks a live process of the host's adoption
	// group to hold it.
	AdoptHostActivityName = "AdoptHost"
	// HostOnlineSignal is what a host's own process sends when it starts,
	// and when it learns it lost its own lease (HostOnline).
	HostOnlineSignal = "online"
	// PickHostActivityName is the local activity that names the host of
	// the worker running a workflow task: the host of a wait_for a front
	// with no worker of its own started.
	PickHostActivityName = "PickHost"
	// StopLoopActivityName stops a wait's loop on its host (LoopRef).
	StopLoopActivityName = "StopLoop"
)

// HostLeaseIDPrefix starts the ID of a host's lease workflow
// (HostLeaseWorkflowID); it belongs to no caller.
const HostLeaseIDPrefix = "durawait-host/"

// HostLeaseWorkflowID is the ID of the lease workflow of host.
func HostLeaseWorkflowID(host string) string { return HostLeaseIDPrefix + host }

// LeaseQueue is the task queue the host lease workflows of a durawait
// whose workflows run on taskQueue run on: every worker polls it, with a
// short stickiness, so that a lease's next step never waits long for a
// worker that died with its cache.
func LeaseQueue(taskQueue string) string { return taskQueue + "-leases" }

// HostQueue is the task queue of host's loops, on a durawait whose
// workflows run on taskQueue. Its holder polls it.
func HostQueue(taskQueue, host string) string { return taskQueue + "-host-" + host }

// InstanceQueue is the task queue of one process (instance), on which the
// leases it is granted arrive. Only that process polls it.
func InstanceQueue(taskQueue, instance string) string { return taskQueue + "-instance-" + instance }

// AdoptQueue is the task queue on which a lapsed lease of a host of
// machine is offered for adoption first; AnyMachine is the queue every
// worker polls, where it is offered after sameMachineOffer. Every worker
// polls its machine's queue and AnyMachine's.
func AdoptQueue(taskQueue, machine string) string { return taskQueue + "-adopt-" + machine }

// AnyMachine names the adoption queue of every worker (AdoptQueue).
const AnyMachine = "any"

// sameMachineOffer is how long a lapsed lease is offered to the workers
// on its host's machine, which can run all of its waits (its pane watches
// and agent runs too), before any worker may adopt it.
const sameMachineOffer = 3 * time.Second

// DefaultHostLease is a lease's length when none is configured: how long
// a holder may go unheard before its hosts' waits move. Its holder renews
// it every half of it.
const DefaultHostLease = 6 * time.Second

// HostLeaseInput is the input of the HostLease workflow, and what it
// continues as new with.
type HostLeaseInput struct {
	// TaskQueue is the durawait's (its waits' workflows'): the host,
	// instance and adoption queues are named after it.
	TaskQueue string `json:"task_queue"`
	Host      string `json:"host"`
	// Machine is the host's machine (its adoption is offered there first).
	Machine string `json:"machine"`
	// Lease is how long a holder may go unheard.
	Lease time.Duration `json:"lease"`
	// Holder, set when the run continued as new, is the process the new
	// run grants the lease to first.
	Holder *HostHolder `json:"holder,omitempty"`
}

// HostHolder is a process that holds, or may hold, a host.
type HostHolder struct {
	// Instance names the process (its InstanceQueue).
	Instance string `json:"instance"`
	// Host is the process's own host.
	Host string `json:"host"`
}

// HostOnline is the HostOnlineSignal: a process of the host itself is up.
type HostOnline struct {
	Instance string `json:"instance"`
	// Machine and Lease are the host's, as the process runs now.
	Machine string        `json:"machine"`
	Lease   time.Duration `json:"lease"`
}

// HoldLeaseInput is the input of the HoldLease activity.
type HoldLeaseInput struct {
	Host string `json:"host"`
	// Own: the holder is the host's own process.
	Own bool `json:"own"`
	// Lease is the activity's heartbeat timeout: the holder renews well
	// within it.
	Lease time.Duration `json:"lease"`
}

// AdoptHostInput is the input of the AdoptHost activity.
type AdoptHostInput struct {
	Host string `json:"host"`
}

// LoopRef names a wait's loop by the workflow run it belongs to: which
// loop StopLoop stops (its activity then ends as cancelled) and
// ProbeState reads.
type LoopRef struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
}

// holdStartTimeout bounds how long a granted lease may wait for its
// holder to take it: a process polls its instance queue all the time, so
// one that has not taken it by then is gone.
const holdStartTimeout = 15 * time.Second

// holdMaxRun is a lease's start-to-close timeout. A holder keeps its lease
// as long as it lives; Temporal requires a bound, and this one is not
// reached.
const holdMaxRun = 10 * 365 * 24 * time.Hour

// adoptAttemptTimeout bounds one AdoptHost attempt, which answers at once.
const adoptAttemptTimeout = 30 * time.Second

// hostLeaseHistoryLimit and hostLeaseChangesPerRun bound a lease
// workflow's run: past either, it continues as new at its next change of
// holder. A holder that keeps its lease adds nothing to the history
// (heartbeats are not events); only restarts and moves do.
const (
	hostLeaseHistoryLimit  = 2000
	hostLeaseChangesPerRun = 100
)

// HostLease keeps the lease of one host: it grants it to one process at a
// time (HoldLease, on that process's instance queue, with the lease as its
// heartbeat timeout) and moves it when its holder is lost:
//
//   - A process of the host itself that is online (HostOnlineSignal) takes
//     precedence: it gets the lease at once when the lease is free, when an
//     earlier process of the host held it (that process is gone: one
//     process runs a host), and, once the adopter released it, when an
//     adopter held it.
//   - A lease whose holder went silent for the lease (its heartbeat timed
//     out), or was released, is offered for adoption (AdoptHost): to the
//     workers of the host's machine for sameMachineOffer, then to any;
//     the first to answer holds it until the host's own process comes
//     back.
//
// All of it is Temporal's timers and the holder's heartbeats: the bound on
// noticing a lost holder is the lease, whatever the number of waits.
func HostLease(ctx workflow.Context, in HostLeaseInput) error {
	if in.Lease <= 0 {
		in.Lease = DefaultHostLease
	}
	l := &hostLease{in: in, online: workflow.GetSignalChannel(ctx, HostOnlineSignal)}
	holder := in.Holder
	for {
		if holder == nil {
			if l.longHistory(ctx) {
				return l.continueAsNew(ctx, nil)
			}
			var err error
			if holder, err = l.findHolder(ctx); err != nil {
				return err
			}
			l.changes++
		}
		next, replaced, err := l.hold(ctx, *holder)
		if err != nil {
			return err
		}
		if replaced {
			l.changes++
			if l.longHistory(ctx) {
				return l.continueAsNew(ctx, next)
			}
		}
		holder = next
	}
}

// hostLease is one run of the HostLease workflow.
type hostLease struct {
	in     HostLeaseInput
	online workflow.ReceiveChannel
	// changes counts the changes of holder in this run.
	changes int
}

// own is the holder that a HostOnline signal names.
func (l *hostLease) own(s HostOnline) *HostHolder {
	if s.Machine != "" {
		l.in.Machine = s.Machine
	}
	if s.Lease > 0 {
		l.in.Lease = s.Lease
	}
	return &HostHolder{Instance: s.Instance, Host: l.in.Host}
}

// longHistory reports whether the run should continue as new.
func (l *hostLease) longHistory(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return l.changes >= hostLeaseChangesPerRun || info.GetCurrentHistoryLength() > hostLeaseHistoryLimit || info.GetContinueAsNewSuggested()
}

// continueAsNew ends the run for a new one that grants the lease to
// holder (nil: none yet), or to the latest own process that signalled
// meanwhile.
func (l *hostLease) continueAsNew(ctx workflow.Context, holder *HostHolder) error {
	for {
		var s HostOnline
		if !l.online.ReceiveAsync(&s) {
			break
		}
		holder = l.own(s)
	}
	in := l.in
	in.Holder = holder
	return workflow.NewContinueAsNewError(ctx, HostLeaseWorkflowName, in)
}

// findHolder waits for a process to hold the host: one of its own that
// comes online, or an adopter: on the host's machine first, then any.
func (l *hostLease) findHolder(ctx workflow.Context) (*HostHolder, error) {
	var s HostOnline
	if l.online.ReceiveAsync(&s) {
		return l.own(s), nil
	}
	queue := l.in.TaskQueue
	holder, err := l.offer(ctx, AdoptQueue(queue, l.in.Machine), sameMachineOffer)
	if holder != nil || err != nil || ctx.Err() != nil {
		return holder, err
	}
	for {
		if holder, err = l.offer(ctx, AdoptQueue(queue, AnyMachine), 0); holder != nil || err != nil || ctx.Err() != nil {
			return holder, err
		}
		// The offer failed (it retries without end, so only a server's
		// refusal ends it): offered again after a pause.
		if err := workflow.Sleep(ctx, adoptAttemptTimeout); err != nil {
			return nil, err
		}
	}
}

// offer offers the host for adoption on queue, for up to wait (0: until
// taken), and returns who holds it: the adopter, or the host's own process
// that came online meanwhile; nil when nobody took it in time.
func (l *hostLease) offer(ctx workflow.Context, queue string, wait time.Duration) (*HostHolder, error) {
	adoptCtx, cancelAdopt := workflow.WithCancel(ctx)
	defer cancelAdopt()
	adoptCtx = workflow.WithActivityOptions(adoptCtx, workflow.ActivityOptions{
		TaskQueue:              queue,
		ScheduleToStartTimeout: wait,
		StartToCloseTimeout:    adoptAttemptTimeout,
		Summary:                "adopt host " + l.in.Host,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second},
	})
	adopt := workflow.ExecuteActivity(adoptCtx, AdoptHostActivityName, AdoptHostInput{Host: l.in.Host})
	var holder *HostHolder
	var adoptErr error
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(l.online, func(c workflow.ReceiveChannel, _ bool) {
		var s HostOnline
		c.Receive(ctx, &s)
		holder = l.own(s)
	})
	sel.AddFuture(adopt, func(f workflow.Future) {
		var h HostHolder
		if adoptErr = f.Get(ctx, &h); adoptErr == nil {
			holder = &h
		}
	})
	sel.Select(ctx)
	switch {
	case holder != nil:
		return holder, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case notPolled(adoptErr):
		return nil, nil // nobody took it in time
	}
	workflow.GetLogger(ctx).Warn("the adoption offer failed", "host", l.in.Host, "queue", queue, "error", adoptErr)
	return nil, nil
}

// hold grants the lease to holder and returns when it ends: next is who
// holds the host after (nil: nobody, the lease is free), and replaced says
// that the host's own process took it over.
func (l *hostLease) hold(ctx workflow.Context, holder HostHolder) (next *HostHolder, replaced bool, err error) {
	own := holder.Host == l.in.Host
	holdCtx, cancelHold := workflow.WithCancel(ctx)
	defer cancelHold()
	holdCtx = workflow.WithActivityOptions(holdCtx, workflow.ActivityOptions{
		TaskQueue:              InstanceQueue(l.in.TaskQueue, holder.Instance),
		ScheduleToStartTimeout: holdStartTimeout,
		StartToCloseTimeout:    holdMaxRun,
		HeartbeatTimeout:       l.in.Lease,
		// An adopter is asked to release the host, and answers once it has
		// stopped its loops; an earlier process of the host itself is gone
		// when another comes online.
		WaitForCancellation: !own,
		Summary:             "lease of host " + l.in.Host + " held by " + holder.Instance,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	lease := workflow.ExecuteActivity(holdCtx, HoldLeaseActivityName, HoldLeaseInput{Host: l.in.Host, Own: own, Lease: l.in.Lease})
	ended := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(lease, func(f workflow.Future) {
		ended = true
		if err := f.Get(ctx, nil); err != nil && !isCanceled(err) {
			workflow.GetLogger(ctx).Info("host lease lapsed", "host", l.in.Host, "holder", holder.Instance, "error", err)
		}
	})
	sel.AddReceive(l.online, func(c workflow.ReceiveChannel, _ bool) {
		var s HostOnline
		c.Receive(ctx, &s)
		if s.Instance == holder.Instance {
			return // the holder itself, while its grant is under way
		}
		next = l.own(s)
	})
	for !ended && next == nil {
		sel.Select(ctx)
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
	}
	if next == nil {
		return nil, false, nil // lapsed or released: the lease is free
	}
	cancelHold()
	if !own && !ended {
		// The adopter releases the host first (or is lost within the
		// lease).
		_ = lease.Get(ctx, nil)
	}
	return next, true, nil
}

// isCanceled reports whether err is a cancellation.
func isCanceled(err error) bool {
	var canceled *temporal.CanceledError
	return errors.As(err, &canceled)
}

// ToolInternal is the DurawaitTool of durawait's own workflows: the
// catalogs and the host leases, which are not waits.
const ToolInternal = "internal"

// RunningWaitsQuery is the visibility query of the running waits: every
// running workflow but durawait's own (the catalogs and the host leases,
// which run for as long as workers do) and the events' latches (which keep
// a post for the retention, and wait for nothing).
var RunningWaitsQuery = "ExecutionStatus = 'Running' AND WorkflowType NOT IN (" + quotedList(append(InternalWorkflowTypes(), EventLatchWorkflowName)) + ")"

// HostLeaseSummary is a host lease's line in the workflow list.
func HostLeaseSummary(host string) string {
	return TruncateUTF8(oneLine("lease of host "+host), MaxSummaryBytes)
}
