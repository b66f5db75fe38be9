package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// LoopAnswerActivityName asks a loop's host for the answer its loop gave
// after Temporal had ended the loop's activity (LoopRef; the loop's own
// result or failure). That happens when the host and the engine stall
// together past the loop's bound and LoopGrace (a SIGSTOP of durawait
// serve, a laptop lid): on SIGCONT the engine's overdue timeout and the
// loop's answer race, and the timeout wins. The loop's host has already
// told its answer to a caller in its process, so the run records the same
// answer instead of "no worker answered".
const LoopAnswerActivityName = "LoopAnswer"

// Error types of a host's LoopAnswer. ErrTypeNoLoopAnswer: the host has
// no end of the loop (the loop does not run on it and left none there); a
// loop of that run resumed later starts stopped, so it tells nobody an
// answer the run does not record. ErrTypeLoopFailed: the loop's end was
// its failure, the error's cause.
const (
	ErrTypeNoLoopAnswer = "NoLoopAnswer"
	ErrTypeLoopFailed   = "LoopFailed"
)

// loopAnswerTimeout bounds how long a wait whose loop's activity timed out
// waits for its host's answer: a live host answers at once, or when the
// loop ends (by its bound, already past: its last sample's allowance).
const loopAnswerTimeout = 10 * time.Second

// awaitLoop waits for a loop's activity (future, on host's queue) into
// valuePtr. When Temporal ended the activity by its timeout, it asks the
// host for the end its loop gave meanwhile (LoopAnswerActivityName) and
// returns that; the timeout error itself when no host had one. The ask is
// not cut short by a cancel of the wait: the loop may have told its
// caller its end already, and the run must record the same.
func awaitLoop(ctx workflow.Context, future workflow.Future, host string, valuePtr any) error {
	err := future.Get(ctx, valuePtr)
	var timeoutErr *temporal.TimeoutError
	if err == nil || !errors.As(err, &timeoutErr) {
		return err
	}
	actx, _ := workflow.NewDisconnectedContext(ctx)
	info := workflow.GetInfo(actx)
	actx = workflow.WithActivityOptions(actx, workflow.ActivityOptions{
		TaskQueue:              HostQueue(info.TaskQueueName, host),
		ScheduleToCloseTimeout: loopAnswerTimeout,
		Summary:                "the loop's answer, from host " + host,
		// Tried again only when it reached a worker handing the host over.
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, MaximumInterval: 2 * time.Second},
	})
	ref := LoopRef{WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID}
	aerr := workflow.ExecuteActivity(actx, LoopAnswerActivityName, ref).Get(actx, valuePtr)
	var appErr *temporal.ApplicationError
	switch {
	case aerr == nil:
		return nil
	case errors.As(aerr, &appErr) && appErr.Type() == ErrTypeLoopFailed && errors.Unwrap(appErr) != nil:
		return errors.Unwrap(appErr) // the loop's own failure, as its host has it
	}
	// No host had the loop's end (or none could say): the timeout stands.
	return err
}
