package hosting

import (
	"context"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/workflows"
)

// heldLease is a host's lease this worker holds: the HoldLease activity
// it answers by its task token, renewed while the worker lives.
type heldLease struct {
	host  string
	own   bool
	token []byte
	// since is when this worker got the lease, by the engine's clock: the
	// loops scheduled on the host's queue after it reach this worker
	// through the queue.
	since time.Time
	// cancel stops the lease's renewal and sweeps.
	cancel context.CancelFunc
}

// onlineRecheck is how often a worker that does not hold its own host's
// lease says again that it is online (a grant lost on the way, a lease
// workflow an operator ended).
const onlineRecheck = 10 * time.Second

// renewInterval is how often a lease is renewed: every half of it, so a
// renewal that fails (or is slow) can be made again before the lease
// lapses. Each renewal is one heartbeat, an engine action, per host.
func renewInterval(lease time.Duration) time.Duration { return max(lease/2, 100*time.Millisecond) }

// HoldLease is the lease of a host granted to this worker (the
// HoldLeaseActivity, on its instance queue). It returns at once; the
// worker renews the lease by the activity's task token, every half of the
// lease, until it stops, releases the host, or learns it lost it.
func (r *Runtime) HoldLease(ctx context.Context, in workflows.HoldLeaseInput) error {
	if r.ctx.Err() != nil {
		return errors.New("the worker is stopping")
	}
	info := activity.GetInfo(ctx)
	r.hold(in, info.TaskToken, info.StartedTime)
	return activity.ErrResultPending
}

// hold starts holding a lease granted at since (the engine's clock, to
// which a loop's scheduled time is compared): polling the host's queue (an
// adopted one), resuming its waits and renewing the lease.
func (r *Runtime) hold(in workflows.HoldLeaseInput, token []byte, since time.Time) {
	lease := in.Lease
	if lease <= 0 {
		lease = r.opts.Lease
	}
	ctx, cancel := context.WithCancel(r.ctx)
	l := &heldLease{host: in.Host, own: in.Own && in.Host == r.opts.Host, token: token, cancel: cancel, since: since}
	r.mu.Lock()
	if old := r.held[in.Host]; old != nil {
		old.cancel() // a new grant of a lease held already (its run continued as new)
	}
	r.held[in.Host] = l
	if l.own {
		r.holdingOwn = true
	}
	r.mu.Unlock()
	r.logger.Info("holding the lease of a host", "lease_of", in.Host, "own", l.own)
	if !l.own {
		if err := r.pollHost(in.Host); err != nil {
			r.logger.Error("could not poll an adopted host's queue; releasing it", "lease_of", in.Host, "error", err)
			r.release(l)
			return
		}
	}
	r.wg.Go(func() { r.keep(ctx, l, lease) })
}

// keep renews a held lease until it ends, and meanwhile sweeps an
// adopted host's waits (the first sweep at once: the resume) on a
// goroutine of their own: a sweep of thousands of waits never delays a
// renewal. The own host's waits are swept from the worker's start,
// whatever its lease (see Start).
func (r *Runtime) keep(ctx context.Context, l *heldLease, lease time.Duration) {
	if !l.own {
		r.wg.Go(func() { r.sweeps(ctx, sweepTarget{host: l.host, since: l.since}) })
	}
	renew := time.NewTicker(renewInterval(lease))
	defer renew.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
			err := r.opts.Client.RecordActivityHeartbeat(ctx, l.token)
			switch {
			case err == nil || ctx.Err() != nil:
			case isCanceled(err):
				// The host's own worker is back: this adopter releases it.
				r.release(l)
				return
			case gone(err):
				// This worker went unheard past the lease (a stall, a
				// lost connection): the lease moved on.
				r.lost(l)
				return
			default:
				r.logger.Warn("could not renew a host's lease; trying again", "lease_of", l.host, "error", err)
			}
		}
	}
}

// sweepTarget is a host whose waits a worker sweeps: its own, from its
// start, or one it adopted, from the grant of its lease.
type sweepTarget struct {
	host string
	// own: the worker's own host (its orphaned agent CLIs are reaped too).
	own bool
	// since is when the worker began to poll the host's queue: a loop
	// scheduled later reaches it through the queue (see resume).
	since time.Time
}

// sweeps sweeps a host's waits at once, again after 2, 4 and 8 s (see
// sweepPause), then every SweepInterval, one sweep at a time, until ctx
// ends (the worker stops, or the adopted host's lease ends). A sweep that
// could not list the host's waits or resume one of them (an engine still
// loading after a restart, a read whose deadline passed while the process
// was stopped) is made again within a second or two, not a SweepInterval
// later: a wait it missed may be near its bound.
func (r *Runtime) sweeps(ctx context.Context, t sweepTarget) {
	repeat(ctx, func(n int) time.Duration { return sweepPause(n, r.opts.SweepInterval) },
		func() bool { return r.sweep(ctx, t) })
}

// earlySweeps is how many sweeps of a host come at short pauses after the
// first (sweepPause).
const earlySweeps = 3

// sweepPause is the pause after a host's n-th sweep that went through:
// 2 s, 4 s and 8 s after the first three, interval after the others (never
// more than interval). Visibility, which a sweep lists the host's waits
// from, can trail by seconds what a restarted engine recorded just before
// its crash: the crash soak saw a wait started 340 ms before a kill go
// unlisted by the next worker's first sweep, and its loop was resumed only
// after its bound. A wait the first sweep could not see yet is looked up
// again while its bound may still be met.
func sweepPause(n int, interval time.Duration) time.Duration {
	if n > earlySweeps {
		return interval
	}
	return min(time.Second<<n, interval)
}

// forget removes a lease from the held ones, unless a newer grant of the
// same host replaced it; it reports whether it did.
func (r *Runtime) forget(l *heldLease) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held[l.host] != l {
		return false
	}
	delete(r.held, l.host)
	if l.own {
		r.holdingOwn = false
	}
	l.cancel()
	return true
}

// release gives a held lease back: an adopted host's loops are dropped
// (its next holder resumes them) and its queue no longer polled, then the
// lease's activity is answered, so the lease workflow moves on at once.
func (r *Runtime) release(l *heldLease) {
	if !r.forget(l) {
		return
	}
	if !l.own {
		r.loops.drop(l.host, errReleased)
		r.unpollHost(l.host)
	}
	// Answered as cancelled when its cancel was asked (an adopter the
	// owner replaces), else as done (this worker stops): either way the
	// lease workflow sees it end.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.opts.Client.CompleteActivity(ctx, l.token, nil, temporal.NewCanceledError())
	if err != nil {
		err = r.opts.Client.CompleteActivity(ctx, l.token, nil, nil)
	}
	if err != nil && !gone(err) {
		r.logger.Warn("could not answer a released lease; it lapses instead", "lease_of", l.host, "error", err)
	}
	r.logger.Info("released the lease of a host", "lease_of", l.host)
}

// lost handles a lease that lapsed while this worker held it. An adopted
// host's loops are dropped (the host has another holder now, or will).
// This worker's own host's loops run on: the worker says it is online
// again, and the owner gets its host back at once (see HostLease); until
// then another holder may run them too, which a loop tolerates (a probe
// sampled twice, a pane watched twice, an agent's output read twice; its
// CLI started once, see AgentRunner).
func (r *Runtime) lost(l *heldLease) {
	if !r.forget(l) {
		return
	}
	r.logger.Warn("the lease of a host lapsed while this worker held it", "lease_of", l.host, "own", l.own)
	if !l.own {
		r.loops.drop(l.host, errReleased)
		r.unpollHost(l.host)
		return
	}
	r.wg.Go(func() {
		if err := r.signalOnline(r.ctx); err != nil && r.ctx.Err() == nil {
			r.logger.Warn("could not tell the host's lease that it is online", "error", err)
		}
	})
}

// holdsOwn reports whether this worker holds its own host's lease.
func (r *Runtime) holdsOwn() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.holdingOwn
}

// stayOnline tells the host's lease workflow that this worker is online,
// at start and whenever it does not hold its own lease. A signal the
// engine did not take (a restarted engine still busy with its backlog) is
// sent again within a second or two, not an onlineRecheck later: until it
// is taken, no adopter is told to give the host back.
func (r *Runtime) stayOnline() {
	repeat(r.ctx, every(onlineRecheck), func() bool {
		if r.holdsOwn() {
			return true
		}
		err := r.signalOnline(r.ctx)
		if err != nil && r.ctx.Err() == nil {
			r.logger.Warn("could not tell the host's lease that it is online; trying again", "error", err)
		}
		return err == nil
	})
}

// signalOnline signals the host's lease workflow (starting it if none
// runs) that this worker, of its group and lease, is online.
func (r *Runtime) signalOnline(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	host := r.opts.Host
	_, err := r.opts.Client.SignalWithStartWorkflow(ctx, workflows.HostLeaseWorkflowID(host), workflows.HostOnlineSignal,
		workflows.HostOnline{Instance: r.opts.Instance, Machine: r.opts.Machine, Lease: r.opts.Lease},
		client.StartWorkflowOptions{
			ID:                       workflows.HostLeaseWorkflowID(host),
			TaskQueue:                workflows.LeaseQueue(r.opts.TaskQueue),
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			StaticSummary:            workflows.HostLeaseSummary(host),
			WorkflowTaskTimeout:      workflows.TaskTimeout,
			TypedSearchAttributes: temporal.NewSearchAttributes(
				workflows.KeyTool.ValueSet(workflows.ToolInternal), workflows.KeyHost.ValueSet(host)),
		},
		workflows.HostLeaseWorkflowName, workflows.HostLeaseInput{TaskQueue: r.opts.TaskQueue, Host: host, Machine: r.opts.Machine, Lease: r.opts.Lease})
	return err
}

// AdoptHost answers an offer to adopt a lost host with this worker: the
// lease workflow then grants it the host's lease.
func (r *Runtime) AdoptHost(_ context.Context, in workflows.AdoptHostInput) (workflows.HostHolder, error) {
	if r.ctx.Err() != nil {
		return workflows.HostHolder{}, errors.New("the worker is stopping")
	}
	r.logger.Info("adopting a host whose lease lapsed", "adopted", in.Host)
	return workflows.HostHolder{Instance: r.opts.Instance, Host: r.opts.Host}, nil
}
