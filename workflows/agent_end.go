package workflows

import (
	"errors"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// How an agent invocation closes, so that Temporal's own status says what
// the agent did (the UI's Status column, ExecutionStatus queries): a
// cancel_agent closes it Canceled, an agent that failed closes it Failed,
// any other end (succeeded, blocked) Completed. Its final payload is the
// same whichever: the result of a Completed run, the details of a Canceled
// run's cancel or of a Failed run's failure (InvocationFromError reads it
// back). The MCP answers are unchanged.

// ErrTypeAgentFailed is the failure type of an invocation whose agent
// failed (its details are its InvocationPayload).
const ErrTypeAgentFailed = "AgentFailed"

// honestStatusChange is the GetVersion change ID of honest closing
// statuses, asked at the invocation's start: a run that began before it
// (no marker in its history) closes Completed, as it did, whenever it
// ends.
const honestStatusChange = "honest-close-status"

// closesHonestly reports whether the invocation closes Canceled or Failed
// when its agent was cancelled or failed (closeError): every invocation
// begun since honestStatusChange. Asked once, at the start.
func closesHonestly(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, honestStatusChange, workflow.DefaultVersion, 1) != workflow.DefaultVersion
}

// closeError is the error an invocation that ended with p closes with,
// when it closes honestly: CanceledError for a cancel_agent, an
// ApplicationError of type ErrTypeAgentFailed for a failed agent, nil
// otherwise; each carries p.
func closeError(p InvocationPayload, honest bool) error {
	if !honest || p.Status != AgentCancelled && p.Status != AgentFailed {
		return nil
	}
	if p.Status == AgentCancelled {
		return temporal.NewCanceledError(p, cancelAgentMark)
	}
	message := "the agent failed"
	if p.Error != nil {
		message += ": " + p.Error.Code
		if p.Error.Message != "" {
			message += ": " + p.Error.Message
		}
	}
	return temporal.NewNonRetryableApplicationError(message, ErrTypeAgentFailed, nil, p)
}

// cancelAgentMark follows the payload in the details of an invocation
// closed by cancel_agent: an operator's cancel of the workflow carries the
// payload alone, and its callers are told who cancelled.
const cancelAgentMark = "cancel_agent"

// InvocationFromError is the final payload an invocation's closing error
// carries (closeError): a cancel_agent's Canceled, a failed agent's
// Failed. ok is false for any other error, an operator's cancel of the
// workflow among them (its callers learn who cancelled from its history).
func InvocationFromError(err error) (p InvocationPayload, ok bool) {
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) && canceled.HasDetails() {
		var mark string
		return p, canceled.Details(&p, &mark) == nil && mark == cancelAgentMark && p.InvocationID != ""
	}
	var failed *temporal.ApplicationError
	if errors.As(err, &failed) && failed.Type() == ErrTypeAgentFailed && failed.HasDetails() {
		return p, failed.Details(&p) == nil && p.InvocationID != ""
	}
	return p, false
}
