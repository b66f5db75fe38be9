package hosting

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/workflows"
)

// The activities on a host's queue. A loop's activity starts the loop and
// returns at once (activity.ErrResultPending): the loop answers it by ID
// when it ends, and the SDK worker's slot is free meanwhile, so a host
// holds thousands of loops with a handful of goroutines of the SDK's.

// refOf is the loop of the activity ctx runs.
func (r *Runtime) refOf(ctx context.Context) loopRef {
	info := activity.GetInfo(ctx)
	return loopRef{
		WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID,
		ActivityID: info.ActivityID, Host: r.hostOfQueue(info.TaskQueue),
	}
}

// PollProbe starts a wait_for's probe loop.
func (r *Runtime) PollProbe(ctx context.Context, in workflows.PollInput) (workflows.WaitForResult, error) {
	r.startProbe(r.refOf(ctx), in, nil)
	return workflows.WaitForResult{}, activity.ErrResultPending
}

// startProbe runs a probe loop, resumed from record when not nil.
func (r *Runtime) startProbe(ref loopRef, in workflows.PollInput, record *workflows.QuietRecord) {
	r.loops.start(ref, func(ctx context.Context) (any, error) {
		return r.opts.Poller.Run(ctx, activities.ProbeRun{
			WorkflowID: ref.WorkflowID, Input: in, Resumed: record,
			RecordQuiet: func(ctx context.Context, rec workflows.QuietRecord) error {
				return r.recordQuiet(ctx, ref, rec)
			},
		})
	})
}

// WatchPane starts a wait_for_text's pane watch.
func (r *Runtime) WatchPane(ctx context.Context, in workflows.WatchPaneInput) (workflows.TextWaitOutcome, error) {
	if r.opts.Panes == nil {
		return workflows.TextWaitOutcome{}, errors.New("this worker watches no tmux panes ([tmux] is off)")
	}
	r.startWatch(r.refOf(ctx), in)
	return workflows.TextWaitOutcome{}, activity.ErrResultPending
}

// startWatch runs a pane watch.
func (r *Runtime) startWatch(ref loopRef, in workflows.WatchPaneInput) {
	r.loops.start(ref, func(ctx context.Context) (any, error) {
		return r.opts.Panes.Watch(ctx, ref.WorkflowID, in)
	})
}

// RunAgent starts (or re-attaches to) an agent run.
func (r *Runtime) RunAgent(ctx context.Context, in workflows.RunAgentInput) (workflows.AgentFinal, error) {
	if r.opts.Agents == nil {
		return workflows.AgentFinal{}, errors.New("this worker runs no agents ([agents] is off)")
	}
	r.startAgent(r.refOf(ctx), activities.AgentRun{Input: in})
	return workflows.AgentFinal{}, activity.ErrResultPending
}

// startAgent runs or follows an agent run.
func (r *Runtime) startAgent(ref loopRef, run activities.AgentRun) {
	r.loops.start(ref, func(ctx context.Context) (any, error) {
		return r.opts.Agents.Run(ctx, run)
	})
}

// StopLoop stops a wait's loop on this host, as its workflow asks.
func (r *Runtime) StopLoop(_ context.Context, in workflows.StopLoopInput) error {
	r.loops.stop(loopKey{in.WorkflowID, in.RunID})
	return nil
}

// AgentLive answers what an agent run's CLI is doing now.
func (r *Runtime) AgentLive(_ context.Context, in workflows.AgentLiveInput) (workflows.AgentLive, error) {
	if r.opts.Agents == nil {
		return workflows.AgentLive{}, errors.New("this worker runs no agents")
	}
	live, ok := r.opts.Agents.Live(in.InvocationID)
	if !ok {
		return workflows.AgentLive{}, errors.New("the run does not follow its CLI on this worker now")
	}
	return live, nil
}

// PickHost names this worker's own host (the local activity a wait_for
// asks when its front named none).
func (r *Runtime) PickHost(context.Context) (string, error) { return r.opts.Host, nil }

// ClaimPaneHost answers a wait_for_text's claim with this worker's host.
func (r *Runtime) ClaimPaneHost(context.Context) (string, error) { return r.opts.Host, nil }

// recordQuiet records a probe loop's quiet window as its activity's
// heartbeat details, trying until Temporal takes it (see
// workflows.QuietRecord: the loop goes on only once it is recorded).
func (r *Runtime) recordQuiet(ctx context.Context, ref loopRef, rec workflows.QuietRecord) error {
	delay := answerRetryInitial
	for {
		err := r.opts.Client.RecordActivityHeartbeatByID(ctx, r.opts.Namespace, ref.WorkflowID, ref.RunID, ref.ActivityID, rec)
		if err == nil || gone(err) || ctx.Err() != nil {
			return ctx.Err()
		}
		if isCanceled(err) {
			return nil // its workflow asks to stop it; the stop follows
		}
		r.logger.Warn("could not record a quiet window; trying again", "workflow", ref.WorkflowID, "error", err)
		if sleepCtx(ctx, delay) != nil {
			return ctx.Err()
		}
		delay = min(2*delay, answerRetryMax)
	}
}
