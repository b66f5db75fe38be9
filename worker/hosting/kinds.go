package hosting

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/internal/eventlatch"
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
	r.startProbe(ctx, r.refOf(ctx), in, nil, false)
	return workflows.WaitForResult{}, activity.ErrResultPending
}

// startProbe runs a probe loop, resumed from record when not nil
// (fromJournal: resumed from the host's journal).
func (r *Runtime) startProbe(parent context.Context, ref loopRef, in workflows.PollInput, record *workflows.ProbeRecord, fromJournal bool) {
	how := r.loopStartOf(ref, workflows.PollProbeActivityName, in, fromJournal)
	if how.journal != nil {
		how.journal.Record = record
	}
	r.loops.start(parent, ref, how, func(ctx context.Context) (any, error) {
		defer r.progress.Delete(ref.key())
		var wake chan struct{}
		if in.Spec.WakeOnEvent != "" {
			wake = make(chan struct{}, 1)
			r.wakes.Store(ref.key(), wake)
			// A loop of the same run started again (resumed) keeps its own.
			defer r.wakes.CompareAndDelete(ref.key(), wake)
		}
		return r.opts.Poller.Run(ctx, activities.ProbeRun{
			WorkflowID: ref.WorkflowID, Input: in, Resumed: record, Wake: wake,
			Record: func(ctx context.Context, rec workflows.ProbeRecord) error {
				return r.recordProbe(ctx, ref, rec)
			},
			OnProgress: func(p workflows.PollProgress) { r.progress.Store(ref.key(), p) },
		})
	})
}

// WakeLoop has a probe loop on this host sample at once, as its wait's
// workflow asks when the wait's wake-up event is posted. A loop that does
// not run here (it ended, or runs elsewhere) has nothing to wake: the
// wake-up is a hint, and the loop's next sample comes on its schedule.
func (r *Runtime) WakeLoop(_ context.Context, in workflows.LoopRef) error {
	if wake, ok := r.wakes.Load(loopKey{in.WorkflowID, in.RunID}); ok {
		select {
		case wake.(chan struct{}) <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
	return nil
}

// SubscribeEvent subscribes a wait to its event's latch (the local
// activity of workflows.SubscribeEventActivityName).
func (r *Runtime) SubscribeEvent(ctx context.Context, in workflows.EventSubscribeInput) error {
	return eventlatch.Subscribe(ctx, r.opts.Client, r.opts.TaskQueue, in)
}

// ProbeState answers what a probe loop on this host saw last.
func (r *Runtime) ProbeState(_ context.Context, in workflows.LoopRef) (workflows.PollProgress, error) {
	p, ok := r.progress.Load(loopKey{in.WorkflowID, in.RunID})
	if !ok {
		return workflows.PollProgress{}, errors.New("the probe loop has taken no sample on this worker yet")
	}
	return p.(workflows.PollProgress), nil
}

// WatchPane starts a wait_for_text's pane watch. A watch this worker
// cannot run (it adopted the host from another tmux host's worker) is
// left to the host's own worker, which resumes it when it comes back.
func (r *Runtime) WatchPane(ctx context.Context, in workflows.WatchPaneInput) (workflows.TextWaitOutcome, error) {
	if r.canWatch(in) {
		r.startWatch(ctx, r.refOf(ctx), in, false)
	}
	return workflows.TextWaitOutcome{}, activity.ErrResultPending
}

// canWatch reports whether this worker can watch the pane: it is a
// worker of the pane's tmux host.
func (r *Runtime) canWatch(in workflows.WatchPaneInput) bool {
	return r.opts.Panes != nil && (in.TmuxQueue == "" || in.TmuxQueue == r.opts.TmuxQueue)
}

// startWatch runs a pane watch (fromJournal: resumed from the host's
// journal).
func (r *Runtime) startWatch(parent context.Context, ref loopRef, in workflows.WatchPaneInput, fromJournal bool) {
	how := r.loopStartOf(ref, workflows.WatchPaneActivityName, in, fromJournal)
	r.loops.start(parent, ref, how, func(ctx context.Context) (any, error) {
		return r.opts.Panes.Watch(ctx, ref.WorkflowID, in)
	})
}

// RunAgent starts (or re-attaches to) an agent run. A run this worker
// cannot follow (it adopted the host from another machine) is left to the
// host's own worker, which resumes it when it comes back.
func (r *Runtime) RunAgent(ctx context.Context, in workflows.RunAgentInput) (workflows.AgentFinal, error) {
	if r.canFollow(in) {
		r.startAgent(ctx, r.refOf(ctx), activities.AgentRun{Input: in}, false)
	}
	return workflows.AgentFinal{}, activity.ErrResultPending
}

// canFollow reports whether this worker can run or follow the agent run.
func (r *Runtime) canFollow(in workflows.RunAgentInput) bool {
	return r.opts.Agents != nil && r.opts.Agents.CanFollow(in)
}

// startAgent runs or follows an agent run (fromJournal: resumed from the
// host's journal). The blockers it signals are journaled as they go.
func (r *Runtime) startAgent(parent context.Context, ref loopRef, run activities.AgentRun, fromJournal bool) {
	how := r.loopStartOf(ref, workflows.RunAgentActivityName, run.Input, fromJournal)
	if j := r.loops.journal; how.journal != nil && j != nil {
		how.journal.Signalled = run.Signalled
		how.journal.Turns = run.Turns
		run.OnSignalled = func(code string) {
			if err := j.signalled(ref.key(), code); err != nil {
				r.logger.Warn("could not journal an agent run's blocker", "workflow", ref.WorkflowID, "error", err)
			}
		}
	}
	r.loops.start(parent, ref, how, func(ctx context.Context) (any, error) {
		return r.opts.Agents.Run(ctx, run)
	})
}

// AnswerAgent gives an agent run its next turn (an answer to its
// blocker), as its workflow asks: journaled first (a run resumed after a
// restart starts from it), then told to the run, which stops the CLI and
// starts it again in its session. With no run of the invocation here yet
// (the host is coming back), it fails, and Temporal's retry brings it
// again.
func (r *Runtime) AnswerAgent(_ context.Context, t workflows.AgentTurn) error {
	if r.opts.Agents == nil {
		return errors.New("this worker runs no agents")
	}
	if j := r.loops.journal; j != nil {
		if err := j.answered(loopKey{t.InvocationID, t.RunID}, t); err != nil {
			// Told but not journaled, a restart would resume the turn
			// before it: tried again (Temporal retries the activity).
			return fmt.Errorf("journal the answer of %s: %w", t.InvocationID, err)
		}
	}
	return r.opts.Agents.Answer(t)
}

// StopLoop stops a wait's loop on this host, as its workflow asks. A stop
// for a loop that does not run here is remembered (a resume under way
// starts stopped) when the host is this worker's own (whose waits it
// resumes from its start) or one it holds; when it is neither (it still
// polls the queue of a host it is handing back), the stop fails, and
// Temporal's retry reaches the worker that runs the loop.
func (r *Runtime) StopLoop(ctx context.Context, in workflows.LoopRef) error {
	key := loopKey{in.WorkflowID, in.RunID}
	host := r.hostOfQueue(activity.GetInfo(ctx).TaskQueue)
	if !r.loops.has(key) && host != r.opts.Host && !r.holds(host) {
		r.loops.stop(key)
		return fmt.Errorf("the loop of %s does not run on this worker, which no longer holds host %s", in.WorkflowID, host)
	}
	r.loops.stop(key)
	return nil
}

// LoopAnswer answers a wait whose loop's activity Temporal ended by its
// timeout with the end its loop gave on this worker (see
// workflows.LoopAnswerActivityName): the loop's result, or its failure
// wrapped as ErrTypeLoopFailed. With none here, it answers NoLoopAnswer,
// unless this worker neither is nor holds the loop's host (it polls the
// host's queue while handing it over): then the error is retryable, and
// the activity's next attempt may reach the worker that ran the loop.
func (r *Runtime) LoopAnswer(ctx context.Context, in workflows.LoopRef) (any, error) {
	key := loopKey{in.WorkflowID, in.RunID}
	host := r.hostOfQueue(activity.GetInfo(ctx).TaskQueue)
	if !r.loops.knows(key) && host != r.opts.Host {
		if !r.holds(host) {
			return nil, fmt.Errorf("the loop of %s does not run on this worker, which no longer holds host %s", in.WorkflowID, host)
		}
		// An adopter that knows nothing of the loop: the host's owner,
		// back or coming back, may have its end on disk. Asked again
		// (within the wait's loopAnswerTimeout, the ask may reach the
		// owner); a loop of the run resumed here later starts stopped.
		r.loops.stop(key)
		return nil, fmt.Errorf("the loop of %s left no answer on this worker, which holds host %s for its owner; asking again", in.WorkflowID, host)
	}
	end, ok := r.loops.collect(ctx, key)
	switch {
	case !ok:
		// An answer, not a fault: benign (logged at DEBUG, no failure
		// counted).
		return nil, temporal.NewApplicationErrorWithOptions(fmt.Sprintf("the loop of %s left no answer on this worker", in.WorkflowID),
			workflows.ErrTypeNoLoopAnswer, temporal.ApplicationErrorOptions{NonRetryable: true, Category: temporal.ApplicationErrorCategoryBenign})
	case end.err != nil:
		return nil, temporal.NewNonRetryableApplicationError("the loop failed", workflows.ErrTypeLoopFailed, end.err)
	}
	return end.result, nil
}

// holds reports whether this worker holds host's lease.
func (r *Runtime) holds(host string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held[host] != nil
}

// AgentLive answers what an agent run's CLI is doing now.
func (r *Runtime) AgentLive(_ context.Context, in workflows.AgentLiveInput) (workflows.AgentLive, error) {
	if r.opts.Agents == nil {
		return workflows.AgentLive{}, errors.New("this worker runs no agents")
	}
	live, ok := r.opts.Agents.Live(in.InvocationID)
	if !ok {
		// An answer, not a fault (benign: the SDK logs it at DEBUG and
		// counts no failure): the wait answers without the live fields.
		return workflows.AgentLive{}, temporal.NewApplicationErrorWithOptions("the run does not follow its CLI on this worker now",
			workflows.ErrTypeNotFollowed, temporal.ApplicationErrorOptions{Category: temporal.ApplicationErrorCategoryBenign})
	}
	return live, nil
}

// PickHost names this worker's own host (the local activity a wait_for
// asks when its front named none), and expects the wait's loop here.
func (r *Runtime) PickHost(ctx context.Context) (string, error) {
	r.expectFrom(ctx)
	return r.opts.Host, nil
}

// ClaimPaneHost answers a wait_for_text's claim with this worker's host,
// and expects the wait's loop here.
func (r *Runtime) ClaimPaneHost(ctx context.Context) (string, error) {
	r.expectFrom(ctx)
	return r.opts.Host, nil
}

// ClaimAgentHost answers an agent invocation's claim with this worker's
// host (its agent runner's claim), and expects the invocation's run here.
func (r *Runtime) ClaimAgentHost(ctx context.Context) (workflows.AgentHostClaim, error) {
	if r.opts.Agents == nil {
		return workflows.AgentHostClaim{}, errors.New("this worker runs no agents")
	}
	r.expectFrom(ctx)
	return r.opts.Agents.ClaimAgentHost(ctx)
}

// ExpectLoop notes that the run of a wait the front in this process just
// started (naming this worker's host) is to run its loop here: a restart
// finds it in Temporal before visibility lists it (see loopJournal.expect).
func (r *Runtime) ExpectLoop(workflowID, runID string) {
	r.expect(loopKey{workflowID, runID})
}

// expectFrom expects the loop of the workflow run an activity (a pick or
// a claim of this host) belongs to.
func (r *Runtime) expectFrom(ctx context.Context) {
	info := activity.GetInfo(ctx)
	r.expect(loopKey{info.WorkflowExecution.ID, info.WorkflowExecution.RunID})
}

// expect notes an expected loop in the journal (none without one).
func (r *Runtime) expect(key loopKey) {
	j := r.loops.journal
	if j == nil || key.workflowID == "" || key.runID == "" {
		return
	}
	if err := j.expect(key); err != nil {
		r.logger.Warn("could not note an expected loop; a restart finds its wait through visibility only", "workflow", key.workflowID, "error", err)
	}
}

// recordProbe records what a probe loop's resumption needs as its
// activity's heartbeat details, trying until Temporal takes it (see
// workflows.ProbeRecord: the loop goes on only once it is recorded).
func (r *Runtime) recordProbe(ctx context.Context, ref loopRef, rec workflows.ProbeRecord) error {
	delay := newRetryDelay()
	for {
		err := r.opts.Client.RecordActivityHeartbeatByID(ctx, r.opts.Namespace, ref.WorkflowID, ref.RunID, ref.ActivityID, rec)
		if err == nil {
			r.journalRecord(ref, rec)
		}
		if err == nil || gone(err) || ctx.Err() != nil {
			return ctx.Err()
		}
		if isCanceled(err) {
			return nil // its workflow asks to stop it; the stop follows
		}
		r.logger.Warn("could not record a probe loop's state; trying again", "workflow", ref.WorkflowID, "error", err)
		if sleepCtx(ctx, delay.next()) != nil {
			return ctx.Err()
		}
	}
}
