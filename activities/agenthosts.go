package activities

import (
	"context"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

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
// tasks within in.Within.
func (h *AgentHosts) Polling(ctx context.Context, in workflows.AgentHostsPollingInput) (int, error) {
	return readiness.LivePollers(ctx, h.Queues, in.Queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY, in.Within, h.Now)
}
