package mcpfront

import (
	"context"
	"encoding/json"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/durawait/durawait/workflows"
)

// sharedWait is a wait that identical calls share: its workflow ID is
// derived from what it waits for.
type sharedWait struct {
	id       string
	summary  string
	memo     map[string]any
	workflow string
	input    any
	// pollMs is how often a task's status is worth asking for.
	pollMs int64
}

// startOrAttach starts the wait, or attaches to it while it runs. It first
// subscribes to the wait's in-process events (so none is missed) and lets a
// run whose outcome was just returned close (so an identical call starts
// anew). The returned function ends the subscription.
func (f *Front) startOrAttach(ctx context.Context, w sharedWait) (client.WorkflowRun, <-chan workflows.WaitEvent, func(), error) {
	events, unsubscribe := f.subscribe(w.id)
	f.waitSettled(ctx, w.id)
	run, err := f.start(ctx, w)
	if err != nil {
		unsubscribe()
		return nil, nil, nil, err
	}
	return run, events, unsubscribe, nil
}

// start starts the wait, or attaches to it while it runs.
func (f *Front) start(ctx context.Context, w sharedWait) (client.WorkflowRun, error) {
	return f.opts.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       w.id,
		TaskQueue:                f.opts.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		StaticSummary:            w.summary,
		Memo:                     w.memo,
	}, w.workflow, w.input)
}

// subscribe follows a workflow's in-process events, when there is a feed.
func (f *Front) subscribe(workflowID string) (<-chan workflows.WaitEvent, func()) {
	if f.opts.Events == nil {
		return nil, func() {}
	}
	return f.opts.Events.Subscribe(workflowID)
}

// awaitOutcome waits for a workflow's result: from Temporal, or earlier from
// the in-process feed when handle says an event is the outcome (the
// workflow records that same outcome durably). handle sees every event in
// order; result receives Temporal's answer when that comes first.
func (f *Front) awaitOutcome(ctx context.Context, run client.WorkflowRun, events <-chan workflows.WaitEvent, result any, handle func(workflows.WaitEvent) bool) error {
	getCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Temporal's answer is decoded here, not in the goroutine, which may
	// still be running when the feed answers first.
	var raw json.RawMessage
	got := make(chan error, 1)
	go func() { got <- run.Get(getCtx, &raw) }()
	for {
		select {
		case ev, open := <-events:
			if !open {
				events = nil
				continue
			}
			if handle(ev) {
				f.settle(run)
				return nil
			}
		case err := <-got:
			if err != nil {
				return err
			}
			return json.Unmarshal(raw, result)
		}
	}
}

// settleTimeout bounds how long a closing run is waited for.
const settleTimeout = 10 * time.Second

// settle remembers a run whose outcome was returned before Temporal closed
// it, until it closes.
func (f *Front) settle(run client.WorkflowRun) {
	id, runID := run.GetID(), run.GetRunID()
	f.settling.Store(id, runID)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		defer cancel()
		_ = f.opts.Temporal.GetWorkflow(ctx, id, runID).Get(ctx, nil)
		f.settling.CompareAndDelete(id, runID)
	}()
}

// waitSettled lets a run whose outcome was already returned close first, so
// that an identical call made right after it starts a new wait instead of
// attaching to the finished one.
func (f *Front) waitSettled(ctx context.Context, id string) {
	v, ok := f.settling.Load(id)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	_ = f.opts.Temporal.GetWorkflow(ctx, id, v.(string)).Get(ctx, nil)
}
