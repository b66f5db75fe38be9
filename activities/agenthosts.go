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
	// Now is the clock the pollers' last access is measured on (nil:
	// time.Now).
	Now func() time.Time
}

// Polling returns how many workers Temporal saw poll in.Queue for activity
// tasks within in.Within. A refusal that a retry cannot change (the
// worker's identity may not describe task queues, or the service does not
// implement it) fails it at once.
func (h *AgentHosts) Polling(ctx context.Context, in workflows.AgentHostsPollingInput) (int, error) {
	n, err := readiness.LivePollers(ctx, h.Queues, in.Queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY, in.Within, h.Now)
	var denied *serviceerror.PermissionDenied
	var unimplemented *serviceerror.Unimplemented
	if errors.As(err, &denied) || errors.As(err, &unimplemented) {
		return 0, temporal.NewNonRetryableApplicationError(err.Error(), "AgentHostsUnknown", err)
	}
	return n, err
}
