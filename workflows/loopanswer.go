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

// ErrTypeNoLoopAnswer is the error type of a host's LoopAnswer that has
// no answer of the loop: the loop does not run on it and left none there.
// A loop of that run resumed later starts stopped, so it tells nobody an
// answer the run does not record.
const ErrTypeNoLoopAnswer = "NoLoopAnswer"

// loopAnswerTimeout bounds how long a wait whose loop's activity timed out
// waits for its host's answer: a live host answers at once, or when the
// loop ends (by its bound, already past: its last sample's allowance).
const loopAnswerTimeout = 10 * time.Second

// awaitLoop waits for a loop's activity (future, on host's queue) into
// valuePtr. When Temporal ended the activity by its timeout, it asks the
// host for the answer its loop gave meanwhile (LoopAnswerActivityName)
// and returns that; the timeout error itself when the host had none.
func awaitLoop(ctx workflow.Context, future workflow.Future, host string, valuePtr any) error {
	err := future.Get(ctx, valuePtr)
	var timeoutErr *temporal.TimeoutError
	if err == nil || ctx.Err() != nil || !errors.As(err, &timeoutErr) {
		return err
	}
	info := workflow.GetInfo(ctx)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              HostQueue(info.TaskQueueName, host),
		ScheduleToCloseTimeout: loopAnswerTimeout,
		Summary:                "the loop's answer, from host " + host,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	ref := LoopRef{WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID}
	aerr := workflow.ExecuteActivity(actx, LoopAnswerActivityName, ref).Get(ctx, valuePtr)
	var appErr *temporal.ApplicationError
	var answerTimeout *temporal.TimeoutError
	switch {
	case aerr == nil:
		return nil
	case errors.As(aerr, &answerTimeout), errors.As(aerr, &appErr) && appErr.Type() == ErrTypeNoLoopAnswer:
		return err // no host had the loop's answer: the loop's own timeout stands
	}
	return aerr // the loop's own failure, as its host has it
}
