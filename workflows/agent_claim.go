package workflows

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// AgentClaimTimeout is how long a claim waits for an agent host to poll the
// agent hosts' queue (ClaimAgentHostActivity, taken by a worker with agents
// configured) before it is offered on the shared queue for
// claimSharedOffer. Runs before claimStormVersion: the bound of the whole
// claim when no host took it.
const AgentClaimTimeout = 2 * time.Minute

// AgentClaimCrashTimeout bounds a claim on the agent hosts' own queue
// (AgentClaimQueue), where only agent hosts poll: an attempt there fails
// only when the host that took it died before it answered. A crash loop of
// the agent hosts delays the invocation by up to this long before it ends
// failed, instead of using up AgentClaimTimeout, which stays the bound of
// "no agent host at all" (no host polls within AgentClaimTimeout, then
// none takes it on the shared queue).
const AgentClaimCrashTimeout = 15 * time.Minute

// AgentClaimQueue is the task queue of the host claims of a durawait
// whose workers poll taskQueue: only the workers with agents configured
// poll it, so the first of them to take the claim runs the CLI, and no
// attempt lands on a worker that cannot claim.
func AgentClaimQueue(taskQueue string) string { return taskQueue + "-agent-hosts" }

// claimQueueVersion is the change ID (workflow.GetVersion) under which the
// claim is first offered on AgentClaimQueue; before it, the claim went to
// the shared task queue, where an attempt taken by a worker without agents
// failed and was retried (the workers of this release still take those).
const claimQueueVersion = "durawait-agent-claim-queue"

// claimQueueWait is how long a claim waits on AgentClaimQueue for an agent
// host of this release before it is offered on the shared queue, where
// agent hosts of the previous release take it: a rolling upgrade that
// brings the agent hosts last loses no invocation. Runs before
// claimStormVersion waited this long.
const claimQueueWait = 30 * time.Second

// claimStormVersion is the change ID (workflow.GetVersion) under which a
// claim waits up to AgentClaimTimeout on AgentClaimQueue for an agent host
// to poll (not claimQueueWait), then is offered on the shared queue for
// claimSharedOffer. Before it, one gap of claimQueueWait without a poller
// ended the hosts' queue phase, and the shared queue got what was left of
// AgentClaimTimeout: in a crash loop of the agent hosts, after minutes of
// lost attempts, nothing (the crash soak's one wrong agent answer after
// the first fixes).
const claimStormVersion = "durawait-agent-claim-storm"

// claimSharedOffer is how long a claim no agent host of this release polled
// for is offered on the shared queue (runs from claimStormVersion): agent
// hosts of the previous release poll it all the time, so they take it at
// once if there are any.
const claimSharedOffer = 30 * time.Second

// claimHostsPollingVersion is the change ID (workflow.GetVersion) under
// which a claim no agent host took within AgentClaimTimeout asks Temporal
// whether agent hosts poll the agent hosts' queue (AgentHostsPollingActivity)
// before it gives up on them: while some did within AgentClaimTimeout, the
// claim is offered there again, while AgentClaimCrashTimeout from its start
// leaves room for a whole offer (hostsLostError). Before it, such a gap always went on to the shared queue
// and, with no host of the previous release there, ended the invocation
// saying no agent host existed: in a storm of engine restarts, where each
// restart reloads the hosts' queue, an attempt could wait 2 minutes for
// hosts that were there (the crash soak's one wrong answer in 400 kills).
const claimHostsPollingVersion = "durawait-agent-claim-hosts-polling"

// claimPollingRounds caps the offers to polling agent hosts: as many as
// AgentClaimCrashTimeout holds, a bound that holds even if an attempt's
// schedule-to-start timeout came early.
const claimPollingRounds = int(AgentClaimCrashTimeout / AgentClaimTimeout)

// AgentHostsPollingInput asks how many agent hosts Temporal saw poll Queue
// (for activity tasks) within Within of now (AgentHostsPollingActivity, a
// local activity).
type AgentHostsPollingInput struct {
	Queue  string        `json:"queue"`
	Within time.Duration `json:"within"`
}

// claimHost has a host claim the invocation and returns the claiming
// host's task queue. Runs of this release offer the claim to the agent
// hosts' own queue, for up to AgentClaimCrashTimeout while agent hosts take
// its attempts (and die before answering) or keep polling it
// (hostsLostError); once no agent host took an attempt within
// AgentClaimTimeout and none polled in that time, it is offered on the
// shared queue for claimSharedOffer (noHostError).
func claimHost(ctx workflow.Context, provider string) (string, error) {
	var hostQueue string
	if workflow.GetVersion(ctx, claimQueueVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		err := workflow.ExecuteActivity(claimOptions(ctx, provider, "", AgentClaimTimeout), ClaimAgentHostActivity).Get(ctx, &hostQueue)
		return hostQueue, err
	}
	started := workflow.Now(ctx)
	stormProof := workflow.GetVersion(ctx, claimStormVersion, workflow.DefaultVersion, 1) >= 1
	queueWait := claimQueueWait
	if stormProof {
		queueWait = AgentClaimTimeout
	}
	// The first attempt's bounds are activity options, not part of the
	// command: runs scheduled with other bounds here replay the same. The
	// offers to polling hosts below are counted from the bounds, so
	// changing AgentClaimTimeout, AgentClaimCrashTimeout or
	// claimSharedOffer needs a new change ID.
	hostsQueue := AgentClaimQueue(workflow.GetInfo(ctx).TaskQueueName)
	opts := claimOptions(ctx, provider, hostsQueue, AgentClaimCrashTimeout)
	opts = workflow.WithScheduleToStartTimeout(opts, queueWait)
	err := workflow.ExecuteActivity(opts, ClaimAgentHostActivity).Get(ctx, &hostQueue)
	// seen is how many agent hosts polled at the last look that could
	// tell (a look that cannot keeps the one before).
	seen := 0
	for round := 1; stormProof && notPolled(err) && ctx.Err() == nil; round++ {
		if !offerAgain(ctx, started, round) ||
			workflow.GetVersion(ctx, claimHostsPollingVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			break
		}
		if n, known := agentHostsPolling(ctx, hostsQueue); known {
			seen = n
		}
		if seen == 0 || !offerAgain(ctx, started, round) {
			break
		}
		left := AgentClaimCrashTimeout - workflow.Now(ctx).Sub(started)
		opts := claimOptions(ctx, provider, hostsQueue, left)
		opts = workflow.WithScheduleToStartTimeout(opts, AgentClaimTimeout)
		err = workflow.ExecuteActivity(opts, ClaimAgentHostActivity).Get(ctx, &hostQueue)
	}
	switch {
	case err == nil || ctx.Err() != nil:
		return hostQueue, err
	case !notPolled(err):
		return "", &hostsLostError{err: err}
	case seen > 0:
		return "", &hostsLostError{err: err, polling: seen}
	}
	left := claimSharedOffer
	if !stormProof {
		left = AgentClaimTimeout - workflow.Now(ctx).Sub(started)
		if left <= 0 {
			return "", &noHostError{err: err, polled: AgentClaimTimeout}
		}
	}
	err = workflow.ExecuteActivity(claimOptions(ctx, provider, "", left), ClaimAgentHostActivity).Get(ctx, &hostQueue)
	if err != nil && ctx.Err() == nil {
		none := &noHostError{err: err, polled: AgentClaimTimeout}
		if stormProof {
			none.shared = claimSharedOffer
		}
		return "", none
	}
	return hostQueue, err
}

// notPolled reports whether a claim attempt failed because no worker took
// it from its queue in time (its schedule-to-start timeout).
func notPolled(err error) bool {
	var timeoutErr *temporal.TimeoutError
	return errors.As(err, &timeoutErr) && timeoutErr.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START
}

// offerAgain reports whether a claim started at started may be offered to
// polling agent hosts once more in round: within claimPollingRounds, and
// with room left in AgentClaimCrashTimeout for a whole AgentClaimTimeout
// and a margin, so that the offer's schedule-to-start timeout, not its
// schedule-to-close, ends it when no host takes it (an engine restart
// delays timers).
func offerAgain(ctx workflow.Context, started time.Time, round int) bool {
	left := AgentClaimCrashTimeout - workflow.Now(ctx).Sub(started)
	return round <= claimPollingRounds && left > AgentClaimTimeout+claimSharedOffer
}

// agentHostsPolling returns how many agent hosts Temporal saw poll queue
// within AgentClaimTimeout, and whether that could be told (describing the
// queue may not be permitted). It is a local activity: the worker running
// this workflow code has it, whatever the release of the other workers.
func agentHostsPolling(ctx workflow.Context, queue string) (int, bool) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: claimSharedOffer,
		StartToCloseTimeout:    claimAttemptTimeout,
		Summary:                "are agent hosts polling " + queue + "?",
		RetryPolicy:            claimRetryPolicy(),
	})
	var polling int
	in := AgentHostsPollingInput{Queue: queue, Within: AgentClaimTimeout}
	if err := workflow.ExecuteLocalActivity(lctx, AgentHostsPollingActivity, in).Get(ctx, &polling); err != nil {
		if ctx.Err() == nil {
			workflow.GetLogger(ctx).Warn("could not tell whether agent hosts poll their queue", "queue", queue, "error", err)
		}
		return 0, false
	}
	return polling, true
}

// noHostError is a claim no agent host took: none polled the agent hosts'
// queue for polled, and none took it on the shared queue in shared (0:
// runs before claimStormVersion, where polled was the whole bound).
type noHostError struct {
	err            error
	polled, shared time.Duration
}

func (e *noHostError) Error() string { return e.err.Error() }
func (e *noHostError) Unwrap() error { return e.err }

// hostsLostError is a claim on the agent hosts' queue that agent hosts did
// not answer within AgentClaimCrashTimeout: they took its attempts and died
// before answering, or (polling > 0: how many, at the last look) polled
// the queue and did not take it.
type hostsLostError struct {
	err     error
	polling int
}

func (e *hostsLostError) Error() string { return e.err.Error() }
func (e *hostsLostError) Unwrap() error { return e.err }

// claimMaxAttempts backs up a claim's time bound with a count that the
// time bound always reaches first.
const claimMaxAttempts = int32(2 * AgentClaimCrashTimeout / time.Second)

// claimAttemptTimeout bounds one claim attempt (an activity option, not a
// command: no version needed).
const claimAttemptTimeout = 5 * time.Second

// claimOptions are the options of a host claim on queue ("" is the
// workflow's own) bounded by budget. Its retries are bounded by time, not
// by a count: on the shared queue a worker without agents configured fails
// an attempt at once (it has no such activity), so in a fleet where only
// some workers run agents a few attempts may all land on the others, while
// attempts every few seconds reach a claiming host if there is one.
func claimOptions(ctx workflow.Context, provider, queue string, budget time.Duration) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              queue,
		ScheduleToCloseTimeout: budget,
		// A claim answers at once; a longer bound only delays the next
		// attempt when the host that took it died (a crash loop used the
		// whole budget on a few such attempts).
		StartToCloseTimeout: claimAttemptTimeout,
		Summary:             "claim a host for the " + provider + " CLI",
		RetryPolicy:         claimRetryPolicy(),
	})
}

// claimRetryPolicy retries a claim's activities every few seconds. They
// are bounded by time (their schedule-to-close timeout); the count only
// backs that up (an attempt every second for the longest budget, and
// more).
func claimRetryPolicy() *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    5 * time.Second,
		MaximumAttempts:    claimMaxAttempts,
	}
}

// unclaimedVersion is the change ID (workflow.GetVersion) under which an
// invocation no host claimed completes with a failed payload; before it,
// the claim retried without end, and a claim that failed failed the
// workflow.
const unclaimedVersion = "durawait-unclaimed-fails-payload"

// unclaimedEndsFailed reports whether a failed host claim ends the
// invocation with a failed payload (runs of this release and later).
func unclaimedEndsFailed(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, unclaimedVersion, workflow.DefaultVersion, 1) >= 1
}

// unclaimedMessage is the error message of an invocation no host claimed,
// err being the claim's failure (its cause, without the activity's IDs).
func unclaimedMessage(err error) string {
	var lost *hostsLostError
	if errors.As(err, &lost) && lost.polling > 0 {
		return fmt.Sprintf("no host claimed this invocation within %s: %d agent host(s) polled its queue within %s "+
			"but none took the claim and answered (see why the agent hosts keep restarting); last error: %s",
			AgentClaimCrashTimeout, lost.polling, AgentClaimTimeout, claimCause(lost.err))
	}
	if errors.As(err, &lost) {
		return fmt.Sprintf("no host claimed this invocation within %s: agent hosts took the claim and were lost "+
			"before they answered, again and again (see why the agent hosts keep restarting); last error: %s",
			AgentClaimCrashTimeout, claimCause(lost.err))
	}
	what := fmt.Sprintf("no host claimed this invocation within %s", AgentClaimTimeout)
	var none *noHostError
	if errors.As(err, &none) && none.shared > 0 {
		what = fmt.Sprintf("no host claimed this invocation: no agent host polled its queue for %s, then none took it within %s on the shared queue",
			none.polled, none.shared)
	}
	return fmt.Sprintf("%s: no durawait worker with [agents] configured took it and stayed up to answer (start one, "+
		"add [agents] to a worker's config, or see why the agent hosts keep restarting); last error: %s", what, claimCause(err))
}

// claimCause is a failed claim's cause, without the activity's IDs.
func claimCause(err error) string {
	cause := err.Error()
	var appErr *temporal.ApplicationError
	var timeoutErr *temporal.TimeoutError
	switch {
	case errors.As(err, &appErr):
		cause = appErr.Message()
	case errors.As(err, &timeoutErr):
		cause = "no worker took the claim"
	}
	return cause
}
