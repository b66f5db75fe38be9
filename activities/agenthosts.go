package activities

import (
	"context"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/internal/readiness"
	"github.com/durawait/durawait/workflows"
)

// AgentHosts answers, for an agent invocation's host claim, whether agent
// hosts poll their queue: what Temporal's task queue description (the
// Temporal UI's "Pollers") says.
type AgentHosts struct {
	Queues readiness.TaskQueueDescriber
	// Own is the claim queue this worker's own agent host polls ("":
	// none). This host counts as polling it whatever Temporal says (an
	// embedded engine just restarted knows no poller yet) or fails to say.
	Own string
	// Now is the clock the pollers' last access is measured on (nil:
	// time.Now).
	Now func() time.Time
}

// Polling returns how many workers Temporal saw poll in.Queue for activity
// tasks within in.Within, and at least 1 when it is this worker's own claim
// queue. A refusal that a retry cannot change (the worker's identity may
// not describe task queues, or the service does not implement it) fails it
// at once.
func (h *AgentHosts) Polling(ctx context.Context, in workflows.AgentHostsPollingInput) (int, error) {
	n, err := readiness.LivePollers(ctx, h.Queues, in.Queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY, in.Within, h.Now)
	if in.Queue == h.Own && in.Queue != "" {
		return max(n, 1), nil
	}
	var denied *serviceerror.PermissionDenied
	var unimplemented *serviceerror.Unimplemented
	if errors.As(err, &denied) || errors.As(err, &unimplemented) {
		return 0, temporal.NewNonRetryableApplicationError(err.Error(), "AgentHostsUnknown", err)
	}
	return n, err
}
