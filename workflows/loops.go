package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// A wait's loop is its long-running side effect on a host: wait_for's
// probe loop (PollProbe), wait_for_text's pane watch (WatchPane), an agent
// run (RunAgent). It is one activity on its host's queue with no
// heartbeat: the host's lease stands for every loop it runs (see
// HostLease), so the loop's engine work is its start and its end, whatever
// it lasts. Its host answers it by ID when it ends; a host that resumes a
// loop after a restart, or adopts it from a lost host, answers the same
// activity.

// LoopGrace is how long past its bound a loop's activity may still be
// answered: time for a host that was down at the bound to come back (or be
// adopted), resume the loop and answer. Temporal ends the activity after
// it, as its schedule-to-close timeout, even if no host is left.
const LoopGrace = 30 * time.Second

// TaskTimeout is the workflow task timeout of durawait's workflows (its
// waits, agent invocations and host leases), which their starters set. A
// task of theirs is milliseconds of work; when the worker holding one
// dies (a kill -9, a crash), Temporal gives the task to another worker
// only after this timeout. At the SDK's 10 s, each kill that caught a
// wait's task in hand added 10 s to that wait's recovery, and a run of
// kills a few seconds apart kept a wait's first task from completing for
// half a minute (the soak's late answers).
const TaskTimeout = 4 * time.Second

// stopLoopTimeout bounds how long a cancelled wait waits for its host to
// stop its loop: a live host answers at once, and a host that is down
// runs no loop (its next holder sees the wait closed).
const stopLoopTimeout = 5 * time.Second

// pickHostTimeout bounds PickHost, which answers at once.
const pickHostTimeout = 10 * time.Second

// loopOptions are the activity options of a loop on host, bounded by bound
// (plus LoopGrace). Temporal never retries a loop: its host restarts a
// loop that fails for a passing reason, and answers only what ends it.
func loopOptions(ctx workflow.Context, host string, bound time.Duration, summary string, waitForCancellation bool) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              HostQueue(workflow.GetInfo(ctx).TaskQueueName, host),
		ScheduleToCloseTimeout: bound + LoopGrace,
		WaitForCancellation:    waitForCancellation,
		Summary:                summary,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
}

// workflowStart is when the run was started: the engine's record of the
// call that started it, from which a wait's bound is counted. The first
// workflow task can run much later (the process that started the run was
// killed before running it; a restarted engine's backlog), and a bound
// counted from it would answer late by as much.
func workflowStart(ctx workflow.Context) time.Time {
	return workflow.GetInfo(ctx).WorkflowStartTime
}

// stopLoop asks the run's host to stop its loop (StopLoop), even on a
// cancelled ctx: cancelling the loop's activity reaches no worker by
// itself, since it has no heartbeat to carry the cancel. It waits at most
// stopLoopTimeout.
func stopLoop(ctx workflow.Context, host string) {
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	info := workflow.GetInfo(ctx)
	sctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              HostQueue(info.TaskQueueName, host),
		ScheduleToCloseTimeout: stopLoopTimeout,
		Summary:                "stop the loop on host " + host,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, MaximumInterval: 2 * time.Second},
	})
	in := LoopRef{WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID}
	if err := workflow.ExecuteActivity(sctx, StopLoopActivityName, in).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("the loop's host did not confirm the stop", "host", host, "error", err)
	}
}

// loopHost is the host a wait's loop runs on: host when the front named
// one (its own worker), else the host of the worker running this task
// (PickHost, a local activity). The wait's DurawaitHost search attribute
// says it, so its holder finds the wait after a restart or a move.
func loopHost(ctx workflow.Context, host string) (string, error) {
	if host == "" {
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			ScheduleToCloseTimeout: pickHostTimeout,
			Summary:                "pick this worker's host",
		})
		if err := workflow.ExecuteLocalActivity(lctx, PickHostActivityName).Get(ctx, &host); err != nil {
			return "", err
		}
	}
	setHost(ctx, host)
	return host, nil
}

// setHost upserts DurawaitHost unless the run started with it.
func setHost(ctx workflow.Context, host string) {
	if current, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(KeyHost); ok && current == host {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, KeyHost.ValueSet(host)); err != nil {
		workflow.GetLogger(ctx).Error("upsert search attributes", "error", err)
	}
}
