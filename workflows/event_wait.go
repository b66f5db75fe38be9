package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Names of the wait_for_event workflow and the activity that subscribes a
// wait to its event's latch: part of the durable contract with running
// histories.
const (
	WaitForEventWorkflowName = "WaitForEvent"
	// SubscribeEventActivityName is the local activity that subscribes a
	// wait to an event's latch, starting the latch when it is not running
	// (EventSubscribeInput).
	SubscribeEventActivityName = "SubscribeEvent"
	// WakeLoopActivityName has a wait_for's probe loop sample at once
	// (LoopRef), on the loop's host.
	WakeLoopActivityName = "WakeLoop"
)

// ErrTypeEventWaitRefused is the Temporal error type of a wait_for_event
// that could not wait: its event's latch refused it (it holds as many waits
// as it may), or no worker could subscribe it.
const ErrTypeEventWaitRefused = "EventWaitRefused"

// subscribeAttemptTimeout bounds one attempt of SubscribeEvent (one
// signal-with-start); it is tried again until the wait's bound.
const subscribeAttemptTimeout = 10 * time.Second

// subscriptionGrace is how long past its wait's bound a latch keeps a
// subscription: a wait whose timer fires a little late still hears a post
// made before it.
const subscriptionGrace = 5 * time.Second

// Reasons a wait_for_event ends with (EventWaitResult.Reason).
const (
	EventReasonPosted    = "posted"
	EventReasonTimeout   = "timeout"
	EventReasonCancelled = "cancelled"
)

// EventLatchRef names an event's latch, and what starts it when it is not
// running.
type EventLatchRef struct {
	ID    string          `json:"id"`
	Start EventLatchInput `json:"start"`
}

// EventSubscribeInput is the input of SubscribeEvent.
type EventSubscribeInput struct {
	Latch        EventLatchRef     `json:"latch"`
	Subscription EventSubscription `json:"subscription"`
}

// WaitForEventInput is the input of the WaitForEvent workflow.
type WaitForEventInput struct {
	Spec  WaitForEventSpec `json:"spec"`
	Latch EventLatchRef    `json:"latch"`
}

// EventWaitResult is wait_for_event's answer.
type EventWaitResult struct {
	// Reason is EventReasonPosted or EventReasonTimeout (a normal result,
	// as wait_for's).
	Reason string `json:"reason"`
	Name   string `json:"name"`
	// Event is the post that ended the wait, when one did.
	Event *EventPost `json:"event,omitempty"`
	// Latched says the post was made before this wait began (kept by the
	// latch).
	Latched bool `json:"latched,omitempty"`
	// ElapsedSec counts from the first call of this wait.
	ElapsedSec          float64       `json:"elapsed_sec"`
	EffectiveMaxWaitSec int           `json:"effective_max_wait_sec"`
	Cancelled           *Cancellation `json:"cancelled,omitempty"`
}

// NewEventWaitResult is the answer of a wait on spec begun at started and
// ended by post, or (post nil) by its bound at now. A wait a post ended
// ended when the post was kept (at once, for a post kept before it): the
// workflow and a front that answers from its feed (EventAnswered) agree.
func NewEventWaitResult(spec WaitForEventSpec, post *EventPost, started, now time.Time) EventWaitResult {
	r := EventWaitResult{Reason: EventReasonTimeout, Name: spec.Name, ElapsedSec: max(now.Sub(started), 0).Seconds(), EffectiveMaxWaitSec: spec.MaxWaitSec}
	if post != nil {
		r.Reason, r.Event, r.Latched = EventReasonPosted, post, post.PostedAt.Before(started)
		r.ElapsedSec = max(post.PostedAt.Sub(started), 0).Seconds()
	}
	return r
}

// WaitForEvent is the workflow behind one wait_for_event call. It
// subscribes to its event's latch (SubscribeEvent, a local activity that
// starts the latch when none runs) and ends on the first post the latch
// tells it, or at its bound with reason timeout. A post kept before the
// wait began is told at once.
//
// It shows DurawaitState running, then matched (a post ended it), timeout
// or cancelled.
func WaitForEvent(ctx workflow.Context, in WaitForEventInput) (EventWaitResult, error) {
	markRunning(ctx)
	out, err := waitForEvent(ctx, in)
	state := StateTimeout
	var canceled *temporal.CanceledError
	switch {
	case errors.As(err, &canceled):
		state = StateCancelled
	case err != nil:
		state = StateError
	case out.Event != nil:
		state = StateMatched
	}
	setState(ctx, state)
	return out, err
}

// waitForEvent is WaitForEvent's body.
func waitForEvent(ctx workflow.Context, in WaitForEventInput) (EventWaitResult, error) {
	started := workflowStart(ctx)
	deadline := started.Add(in.Spec.MaxWait())
	posted := workflow.GetSignalChannel(ctx, EventPostedSignal)
	refused := workflow.GetSignalChannel(ctx, EventRefusedSignal)
	subscribed := subscribeEvent(ctx, in.Latch, EventSubscription{
		WaitID: workflow.GetInfo(ctx).WorkflowExecution.ID, Match: in.Spec.Match, AfterSeq: in.Spec.AfterSeq,
		Started: started, Until: deadline.Add(subscriptionGrace),
	}, deadline)
	timer := workflow.NewTimer(ctx, max(deadline.Sub(workflow.Now(ctx)), 0))
	var (
		post    *EventPost
		ended   bool
		failure error
	)
	for !ended {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(posted, func(c workflow.ReceiveChannel, _ bool) {
			var p EventPost
			c.Receive(ctx, &p)
			// The latch tells only the posts that pass the filter; a
			// stray one (an older subscription of this ID) is checked too.
			if matchesPost(p, in.Spec.Match, in.Spec.AfterSeq) {
				post, ended = &p, true
			}
		})
		sel.AddReceive(refused, func(c workflow.ReceiveChannel, _ bool) {
			var why string
			c.Receive(ctx, &why)
			ended, failure = true, temporal.NewNonRetryableApplicationError(why, ErrTypeEventWaitRefused, nil)
		})
		sel.AddFuture(timer, func(f workflow.Future) { ended, failure = true, f.Get(ctx, nil) })
		if subscribed != nil {
			sel.AddFuture(subscribed, func(f workflow.Future) {
				subscribed = nil
				// Tried until the bound: a failure then is the bound
				// passing, which the timer answers; before it, the wait
				// cannot hear a post, and says so.
				err := f.Get(ctx, nil)
				if err != nil && ctx.Err() == nil && workflow.Now(ctx).Before(deadline) {
					ended, failure = true, temporal.NewNonRetryableApplicationError(
						fmt.Sprintf("could not subscribe to event %s: %v", in.Spec.Name, err), ErrTypeEventWaitRefused, err)
				}
			})
		}
		sel.Select(ctx)
	}
	if failure != nil {
		return EventWaitResult{}, failure
	}
	return NewEventWaitResult(in.Spec, post, started, workflow.Now(ctx)), nil
}

// subscribeEvent runs SubscribeEvent, tried again until deadline.
func subscribeEvent(ctx workflow.Context, latch EventLatchRef, sub EventSubscription, deadline time.Time) workflow.Future {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: max(deadline.Sub(workflow.Now(ctx)), time.Second),
		StartToCloseTimeout:    subscribeAttemptTimeout,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumInterval: 5 * time.Second},
	})
	return workflow.ExecuteLocalActivity(lctx, SubscribeEventActivityName, EventSubscribeInput{Latch: latch, Subscription: sub})
}
