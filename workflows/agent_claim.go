package workflows

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// AgentClaimTimeout is how long a claim waits for an agent host to take
// it from the agent hosts' queue (ClaimAgentHostActivity, polled by the
// workers with agents configured) before it asks whether any polls it.
const AgentClaimTimeout = 2 * time.Minute

// AgentClaimCrashTimeout bounds a claim: an attempt on the agent hosts'
// queue fails only when the host that took it died before it answered, or
// when no host took it in AgentClaimTimeout while some polled (a storm of
// restarts). A crash loop of the agent hosts delays the invocation by up
// to this long before it ends failed; AgentClaimTimeout stays the bound of
// "no agent host at all".
const AgentClaimCrashTimeout = 15 * time.Minute

// AgentClaimQueue is the task queue of the host claims of a durawait
// whose workers poll taskQueue: only the workers with agents configured
// poll it, so the first of them to take the claim runs the CLI.
func AgentClaimQueue(taskQueue string) string { return taskQueue + "-agent-hosts" }

// claimMargin is the room a claim keeps in AgentClaimCrashTimeout beyond a
// whole offer, so that an offer's schedule-to-start timeout, not its
// schedule-to-close, ends it when no host takes it (an engine restart
// delays timers).
const claimMargin = 30 * time.Second

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

// claimHost has an agent host claim the invocation and returns its claim.
// The claim is offered on the agent hosts' queue; when no host took it
// within AgentClaimTimeout, Temporal is asked whether agent hosts poll
// that queue, and while some did (a storm of restarts reloads the queue)
// it is offered again, for up to AgentClaimCrashTimeout (hostsLostError).
// When none polled, no agent host is up (noHostError).
func claimHost(ctx workflow.Context, provider string) (AgentHostClaim, error) {
	var claim AgentHostClaim
	started := workflow.Now(ctx)
	hostsQueue := AgentClaimQueue(workflow.GetInfo(ctx).TaskQueueName)
	offer := func(budget time.Duration) error {
		opts := claimOptions(ctx, provider, hostsQueue, budget)
		opts = workflow.WithScheduleToStartTimeout(opts, AgentClaimTimeout)
		return workflow.ExecuteActivity(opts, ClaimAgentHostActivity).Get(ctx, &claim)
	}
	err := offer(AgentClaimCrashTimeout)
	// seen is how many agent hosts polled at the last look that could
	// tell (a look that cannot keeps the one before).
	seen := 0
	for round := 1; notPolled(err) && ctx.Err() == nil && offerAgain(ctx, started, round); round++ {
		if n, known := agentHostsPolling(ctx, hostsQueue); known {
			seen = n
		}
		if seen == 0 || !offerAgain(ctx, started, round) {
			break
		}
		err = offer(AgentClaimCrashTimeout - workflow.Now(ctx).Sub(started))
	}
	switch {
	case err == nil || ctx.Err() != nil:
		return claim, err
	case !notPolled(err):
		return claim, &hostsLostError{err: err}
	case seen > 0:
		return claim, &hostsLostError{err: err, polling: seen}
	}
	return claim, &noHostError{err: err, polled: AgentClaimTimeout}
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
	return round <= claimPollingRounds && left > AgentClaimTimeout+claimMargin
}

// agentHostsPolling returns how many agent hosts Temporal saw poll queue
// within AgentClaimTimeout, and whether that could be told (describing the
// queue may not be permitted). It is a local activity: the worker running
// this workflow code has it, whatever the release of the other workers.
func agentHostsPolling(ctx workflow.Context, queue string) (int, bool) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: claimMargin,
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
// queue for polled.
type noHostError struct {
	err    error
	polled time.Duration
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

// claimAttemptTimeout bounds one claim attempt, which answers at once.
const claimAttemptTimeout = 5 * time.Second

// claimOptions are the options of a host claim on queue bounded by
// budget. Its retries are bounded by time, not by a count: an attempt
// fails only when the host that took it died before it answered, and
// attempts every few seconds reach a live host if there is one.
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
