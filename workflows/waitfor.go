package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// WaitForWorkflowName and PollProbeActivityName are the names the worker
// registers; they are part of the durable contract with running histories.
const (
	WaitForWorkflowName   = "WaitFor"
	PollProbeActivityName = "PollProbe"
	// WaitObserveUpdate asks a running wait_for what its probe loop saw
	// last (an operator's `durawait waits show`): the loop's progress lives
	// in its host's memory, which the update asks (ProbeStateActivityName).
	WaitObserveUpdate = "observe"
	// ProbeStateActivityName asks a probe loop's host for its progress
	// (LoopRef, answered with a PollProgress).
	ProbeStateActivityName = "ProbeState"
)

// probeStateTimeout bounds how long an observe update waits for the
// loop's host.
const probeStateTimeout = 5 * time.Second

// Temporal error types (the Type of a temporal.ApplicationError) of a
// wait_for that ended without a result. The probe loop's host answers the
// activity with them; the caller reads the error's message.
const (
	ErrTypeProbeOutputTooLarge = "ProbeOutputTooLarge"
	ErrTypeProbeReturnedError  = "ProbeReturnedError"
	ErrTypeProbeHung           = "ProbeHung"
	ErrTypeInvalidSpec         = "InvalidSpec"
	// ErrTypeProbeNotAllowed: the worker's probe policy refuses the probe
	// (an input that did not come through durawait's front end, or a
	// front end configured otherwise than the worker).
	ErrTypeProbeNotAllowed = "ProbeNotAllowed"
	// ErrTypeNoHost: no host answered the probe loop within the bound and
	// LoopGrace (every worker that could run it was down).
	ErrTypeNoHost = "NoHost"
)

// WaitForInput is the input of the WaitFor workflow.
type WaitForInput struct {
	Spec WaitForSpec `json:"spec"`
	// Host is the host whose queue runs the probe loop: the front's own
	// when it has a worker in its process (durawait serve); empty lets the
	// worker that runs the first workflow task name its own.
	Host string `json:"host,omitempty"`
	// Wake, when the spec names a wake-up event, is that event's latch.
	Wake *EventLatchRef `json:"wake,omitempty"`
}

// PollInput is the input of the PollProbe activity: the spec and when the
// wait began, from which Schedule derives everything else.
type PollInput struct {
	Spec WaitForSpec `json:"spec"`
	// StartedAt is when the wait began (the first call).
	StartedAt time.Time `json:"started_at"`
}

// Schedule is the wait's sampling schedule.
func (in PollInput) Schedule() PollSchedule { return NewPollSchedule(in.Spec, in.StartedAt) }

// WaitFor is the workflow behind one wait_for call. Its probe loop is one
// activity on a host's queue (see loops.go): the history has the same few
// events whether the wait takes 3 samples or 300, and no heartbeats.
//
// The bound is enforced twice. The loop never sleeps or probes past the
// deadline, and races each probe call against it. Temporal enforces the
// activity's schedule-to-close timeout (deadline plus LoopGrace) as a
// durable server-side timer, which ends the wait even if no host is left
// to run the loop.
//
// A run shows DurawaitState: running from the start (its front starts it
// so; started without it, it upserts it at once), then how it ended
// (matched, settled, failed, timeout, cancelled, error). The end state is
// upserted on the way out, not in a defer: a deferred upsert would also
// run when the SDK evicts the workflow from its cache (runtime.Goexit), on
// a discarded environment.
func WaitFor(ctx workflow.Context, in WaitForInput) (WaitForResult, error) {
	markRunning(ctx)
	result, err := waitFor(ctx, in)
	setState(ctx, waitForEndState(result, err))
	return result, err
}

// waitFor is WaitFor's body.
func waitFor(ctx workflow.Context, in WaitForInput) (result WaitForResult, err error) {
	started := workflowStart(ctx)
	host, err := loopHost(ctx, in.Host)
	if err != nil {
		return WaitForResult{}, err
	}
	if err := workflow.SetUpdateHandler(ctx, WaitObserveUpdate, func(ctx workflow.Context) (PollProgress, error) {
		return probeState(ctx, host)
	}); err != nil {
		return WaitForResult{}, err
	}
	if in.Wake != nil {
		followWakeUps(ctx, *in.Wake, host, started.Add(in.Spec.MaxWait()))
	}
	left := in.Spec.MaxWait() - workflow.Now(ctx).Sub(started)
	lctx := loopOptions(ctx, host, max(left, 0), PollSummary(in.Spec), false)
	err = awaitLoop(ctx, workflow.ExecuteActivity(lctx, PollProbeActivityName, PollInput{Spec: in.Spec, StartedAt: started}), host, &result)
	var timeoutErr *temporal.TimeoutError
	switch {
	case err == nil:
		return result, nil
	case ctx.Err() != nil:
		stopLoop(ctx, host)
		return WaitForResult{}, err
	case errors.As(err, &timeoutErr):
		return WaitForResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("no worker answered the probe loop of %s within max_wait_sec %d + %d s: host %s and every worker that could adopt it were down",
				in.Spec.Probe.Tool, in.Spec.MaxWaitSec, int(LoopGrace/time.Second), host),
			ErrTypeNoHost, err)
	}
	return WaitForResult{}, err
}

// MaxWakeUps bounds the wake-ups of one wait_for: its history grows by a
// signal and an activity with each. Posts past it leave the probe to its
// schedule.
const MaxWakeUps = 100

// followWakeUps subscribes the wait to its wake-up event's latch and, for
// each post the latch tells, has the probe loop on host sample at once
// (WakeLoopActivityName), until the wait ends or it woke the loop
// MaxWakeUps times. Posts told while a wake-up is on its way count as one.
func followWakeUps(ctx workflow.Context, latch EventLatchRef, host string, deadline time.Time) {
	info := workflow.GetInfo(ctx)
	loop := LoopRef{WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID}
	posted := workflow.GetSignalChannel(ctx, EventPostedSignal)
	subscribeEvent(ctx, latch, EventSubscription{WaitID: loop.WorkflowID, Until: deadline.Add(subscriptionGrace), Wake: true}, deadline)
	wctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              HostQueue(info.TaskQueueName, host),
		ScheduleToCloseTimeout: stopLoopTimeout,
		Summary:                "wake the probe loop: event " + latch.Start.Name + " was posted",
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 2},
	})
	workflow.Go(ctx, func(ctx workflow.Context) {
		for range MaxWakeUps {
			var p EventPost
			if !posted.Receive(ctx, &p) {
				return
			}
			for posted.ReceiveAsync(&p) {
			}
			if err := workflow.ExecuteActivity(wctx, WakeLoopActivityName, loop).Get(ctx, nil); err != nil && ctx.Err() == nil {
				workflow.GetLogger(ctx).Warn("the probe loop's host did not take the wake-up", "host", host, "error", err)
			}
		}
	})
}

// waitForEndState is the DurawaitState of a wait_for that returned result
// and err.
func waitForEndState(result WaitForResult, err error) WaitState {
	var canceled *temporal.CanceledError
	switch {
	case err == nil:
		return WaitState(result.Reason) // the reasons are states of the same names
	case errors.As(err, &canceled):
		return StateCancelled
	}
	return StateError
}

// probeState asks the probe loop's host for the loop's progress.
func probeState(ctx workflow.Context, host string) (PollProgress, error) {
	info := workflow.GetInfo(ctx)
	sctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              HostQueue(info.TaskQueueName, host),
		ScheduleToCloseTimeout: probeStateTimeout,
		Summary:                "what did the probe loop see last?",
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var p PollProgress
	err := workflow.ExecuteActivity(sctx, ProbeStateActivityName, LoopRef{WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID}).Get(ctx, &p)
	return p, err
}
