package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// AgentClaimTimeout bounds how long an invocation waits for a host to claim
// it (ClaimAgentHostActivity, taken by a worker with agents configured),
// over every attempt.
const AgentClaimTimeout = 2 * time.Minute

// AgentClaimQueue is the task queue of the host claims of a durawait
// whose workers poll taskQueue: only the workers with agents configured
// poll it, so the first of them to take the claim runs the CLI, and no
// attempt lands on a worker that cannot claim.
func AgentClaimQueue(taskQueue string) string { return taskQueue + "-agent-hosts" }

// claimQueueVersion is the change ID (workflow.GetVersion) under which the
// claim is scheduled on AgentClaimQueue; before it, the claim went to the
// shared task queue, where an attempt taken by a worker without agents
// failed and was retried (the workers of this release still take those).
const claimQueueVersion = "durawait-agent-claim-queue"

// claimOptions are the options of the host claim. Its retries are bounded
// by time (AgentClaimTimeout), not by a count: when no agent host polls, or
// one is restarting, attempts every few seconds reach a host that comes
// back within the bound.
func claimOptions(ctx workflow.Context, provider string) workflow.Context {
	opts := workflow.ActivityOptions{
		ScheduleToCloseTimeout: AgentClaimTimeout,
		StartToCloseTimeout:    time.Minute,
		Summary:                "claim a host for the " + provider + " CLI",
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    5 * time.Second,
		},
	}
	if workflow.GetVersion(ctx, claimQueueVersion, workflow.DefaultVersion, 1) >= 1 {
		opts.TaskQueue = AgentClaimQueue(workflow.GetInfo(ctx).TaskQueueName)
	}
	return workflow.WithActivityOptions(ctx, opts)
}

// unclaimedVersion is the change ID (workflow.GetVersion) under which an
// invocation no host claimed completes with a failed payload; before it,
// the claim retried without end, and a claim that failed failed the
// workflow.
const unclaimedVersion = "durawait-unclaimed-fails-payload"

// unclaimedEndsFailed reports whether a failed host claim ends the
// invocation with a failed payload (runs of this release and later).
func unclaimedEndsFailed(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, unclaimedVersion, workflow.DefaultVersion, 1) >= 1
}

// unclaimedMessage is the error message of an invocation no host claimed,
// err being the claim's failure (its cause, without the activity's IDs).
func unclaimedMessage(err error) string {
	cause := err.Error()
	var appErr *temporal.ApplicationError
	var timeoutErr *temporal.TimeoutError
	switch {
	case errors.As(err, &appErr):
		cause = appErr.Message()
	case errors.As(err, &timeoutErr):
		cause = "no worker took the claim"
	}
	return fmt.Sprintf("no host claimed this invocation within %s: no durawait worker with [agents] configured "+
		"took it (start one, or add [agents] to a worker's config); last error: %s", AgentClaimTimeout, cause)
}
