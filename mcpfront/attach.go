package mcpfront

import (
	"context"
	"encoding/json"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/durawait/durawait/workflows"
)

// startOrAttach subscribes to the wait's events, lets a settling run of it
// close, and starts the wait or attaches to it while it runs: steps 1 to 3
// of the dance described at sharedWait. The returned function ends the
// subscription.
func (f *Front) startOrAttach(ctx context.Context, w sharedWait) (client.WorkflowRun, <-chan workflows.WaitEvent, func(), error) {
	events, unsubscribe := f.subscribe(w)
	report := &startReport{}
	var (
		run client.WorkflowRun
		err error
	)
	// The Temporal calls, off the stack the call then blocks on.
	offStack(func() {
		f.waitSettled(ctx, w.id)
		run, err = f.start(context.WithValue(ctx, startReportKey{}, report), w)
		// Only a start has a loop not scheduled yet (an attach finds the
		// wait noted, or long listed).
		if err == nil && !w.noLoop && f.opts.Host != "" && f.opts.ExpectLoop != nil && report.how() != waitAttached {
			f.opts.ExpectLoop(run.GetID(), run.GetRunID())
		}
	})
	if err != nil {
		unsubscribe()
		return nil, nil, nil, err
	}
	noteWait(ctx, run.GetID(), report.how())
	return run, events, unsubscribe, nil
}

// start starts the wait, or attaches to it while it runs: step 3 of the
// dance described at sharedWait.
// Starts wait their turn and are retried while Temporal is busy (see
// starter).
func (f *Front) start(ctx context.Context, w sharedWait) (client.WorkflowRun, error) {
	var run client.WorkflowRun
	err := f.starts.do(ctx, func(ctx context.Context) error {
		var err error
		run, err = f.opts.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID:                       w.id,
			TaskQueue:                f.opts.TaskQueue,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			StaticSummary:            w.summary,
			StaticDetails:            w.details,
			Memo:                     w.memo,
			TypedSearchAttributes:    w.attrs,
			// A worker in this process (durawait serve) takes the first
			// workflow task in the start's answer, skipping the trip through
			// matching; without one the SDK asks nothing of the kind.
			EnableEagerStart:    true,
			WorkflowTaskTimeout: workflows.TaskTimeout,
		}, w.workflow, w.input)
		return err
	})
	return run, err
}

// subscribe follows a wait's in-process events, when there is a feed:
// step 1 of the dance described at sharedWait.
func (f *Front) subscribe(w sharedWait) (<-chan workflows.WaitEvent, func()) {
	feed := w.feed
	if feed == nil {
		feed = f.opts.Events
	}
	if feed == nil {
		return nil, func() {}
	}
	return feed.Subscribe(w.id)
}

// awaitOutcome waits for a workflow's result: from Temporal, or earlier
// from the in-process feed when handle says an event is the outcome, and
// then the run settles (steps 4 and 5 of the dance described at
// sharedWait). handle sees every event in order; result receives
// Temporal's answer when that comes first. A loop's failure the feed
// tells (workflows.WaitFailed) is returned as a *loopFailure.
//
// With a feed, Temporal's answer is read once the run is seen closed
// (closes: one visibility look a second for every call) or, at the
// latest, bound plus LoopGrace and a margin after the call began (the
// run must have closed by then); without one, by a long poll from the
// start.
func (f *Front) awaitOutcome(ctx context.Context, run client.WorkflowRun, events <-chan workflows.WaitEvent, bound time.Duration, result any, handle func(workflows.WaitEvent) bool) error {
	getCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Temporal's answer is decoded here, not in the goroutine, which may
	// still be running when the feed answers first.
	var raw json.RawMessage
	got := make(chan error, 1)
	poll := func() { go func() { got <- getResult(getCtx, run, &raw) }() }
	var closed <-chan struct{}
	var fallback <-chan time.Time
	if events == nil || bound <= 0 {
		poll()
	} else {
		c, done := f.closes.await(run.GetID(), run.GetRunID())
		defer done()
		closed = c
		timer := time.NewTimer(bound + workflows.LoopGrace + closedFallbackMargin)
		defer timer.Stop()
		fallback = timer.C
	}
	for {
		select {
		case ev, open := <-events:
			if !open {
				events = nil
				continue
			}
			if failed, ok := ev.(workflows.WaitFailed); ok {
				f.settle(run)
				return &loopFailure{message: failed.Message}
			}
			if handle(ev) {
				f.settle(run)
				return nil
			}
		case <-closed:
			closed, fallback = nil, nil
			poll()
		case <-fallback:
			closed, fallback = nil, nil
			poll()
		case err := <-got:
			if err != nil {
				return err
			}
			return json.Unmarshal(raw, result)
		case <-ctx.Done():
			// The caller hung up, or durawait drains: the wait runs on.
			return ctx.Err()
		}
	}
}

// closedFallbackMargin is how long past its bound and LoopGrace a call
// waits before it asks Temporal for its run's end directly, in case the
// look for closes missed it.
const closedFallbackMargin = 30 * time.Second

// settleTimeout bounds how long a closing run is waited for.
const settleTimeout = 10 * time.Second

// settle remembers a run whose outcome was returned before Temporal closed
// it, until it closes (at most settleTimeout): step 5 of the dance
// described at sharedWait. With a feed, the close is seen by the look for
// closes (one for every run), not by a long poll per run.
func (f *Front) settle(run client.WorkflowRun) {
	id, runID := run.GetID(), run.GetRunID()
	f.settling.Store(id, runID)
	go func() {
		defer f.settling.CompareAndDelete(id, runID)
		if f.opts.Events != nil {
			closed, done := f.closes.await(id, runID)
			defer done()
			timer := time.NewTimer(settleTimeout)
			defer timer.Stop()
			select {
			case <-closed:
			case <-timer.C:
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		defer cancel()
		_ = f.opts.Temporal.GetWorkflow(ctx, id, runID).Get(ctx, nil)
	}()
}

// waitSettled lets a run whose outcome was already returned close first, so
// that an identical call made right after it starts a new wait instead of
// attaching to the finished one: step 2 of the dance described at
// sharedWait.
func (f *Front) waitSettled(ctx context.Context, id string) {
	v, ok := f.settling.Load(id)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	_ = f.opts.Temporal.GetWorkflow(ctx, id, v.(string)).Get(ctx, nil)
}
