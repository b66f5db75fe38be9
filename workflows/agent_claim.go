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

// claimOptions are the options of the host claim. A worker without agents
// configured fails an attempt at once (it has no such activity), so the
// retries are bounded by time, not by a count: in a fleet where only some
// workers run agents, a few attempts may all land on the others, while
// attempts every few seconds for AgentClaimTimeout reach a claiming host if
// there is one.
func claimOptions(ctx workflow.Context, provider string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ScheduleToCloseTimeout: AgentClaimTimeout,
		StartToCloseTimeout:    time.Minute,
		Summary:                "claim a host for the " + provider + " CLI",
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    5 * time.Second,
		},
	})
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
