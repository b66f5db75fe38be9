package activities

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/durawait/durawait/workflows"
)

// queueDescriber answers DescribeTaskQueue with pollers of activity tasks
// on one queue.
type queueDescriber struct {
	queue   string
	pollers []*taskqueuepb.PollerInfo
	err     error
}

func (d queueDescriber) DescribeTaskQueue(_ context.Context, queue string, typ enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	if d.err != nil {
		return nil, d.err
	}
	if typ != enumspb.TASK_QUEUE_TYPE_ACTIVITY {
		return nil, fmt.Errorf("asked for %s pollers; claims are activity tasks", typ)
	}
	if queue != d.queue {
		return &workflowservice.DescribeTaskQueueResponse{}, nil
	}
	return &workflowservice.DescribeTaskQueueResponse{Pollers: d.pollers}, nil
}

func TestAgentHostsPollingCountsOnlyRecentPollersOfTheQueue(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	poller := func(id string, ago time.Duration) *taskqueuepb.PollerInfo {
		return &taskqueuepb.PollerInfo{Identity: id, LastAccessTime: timestamppb.New(now.Add(-ago))}
	}
	hosts := &AgentHosts{
		Queues: queueDescriber{queue: "dw-agent-hosts", pollers: []*taskqueuepb.PollerInfo{
			poller("1@a", 5*time.Second),
			poller("2@b", 119*time.Second),
			poller("3@c", 4*time.Minute), // died minutes ago; Temporal still lists it
			{Identity: "4@d"},            // no access time
		}},
		Now: func() time.Time { return now },
	}
	n, err := hosts.Polling(context.Background(), workflows.AgentHostsPollingInput{Queue: "dw-agent-hosts", Within: 2 * time.Minute})
	require.NoError(t, err)
	assert.Equal(t, 2, n)

	n, err = hosts.Polling(context.Background(), workflows.AgentHostsPollingInput{Queue: "other", Within: 2 * time.Minute})
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestAgentHostsPollingFailsAtOnceWhenRefusedForGood(t *testing.T) {
	for _, tc := range []struct {
		err       error
		retryable bool
	}{
		{serviceerror.NewPermissionDenied("DescribeTaskQueue is not allowed", ""), false},
		{serviceerror.NewUnimplemented("DescribeTaskQueue"), false},
		{serviceerror.NewUnavailable("engine restarting"), true},
	} {
		hosts := &AgentHosts{Queues: queueDescriber{err: tc.err}}
		_, err := hosts.Polling(context.Background(), workflows.AgentHostsPollingInput{Queue: "q", Within: time.Minute})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `describe task queue "q"`)
		var appErr *temporal.ApplicationError
		assert.Equal(t, !tc.retryable, errors.As(err, &appErr) && appErr.NonRetryable(), "%v", tc.err)
	}
}

// A worker that is itself an agent host counts itself on its own claim
// queue, whatever Temporal says (an embedded engine just restarted knows
// no poller yet), and even when Temporal cannot be asked.
func TestAgentHostsPollingCountsThisHostOnItsOwnQueue(t *testing.T) {
	for _, d := range []queueDescriber{{queue: "dw-agent-hosts"}, {err: serviceerror.NewUnavailable("engine restarting")}} {
		hosts := &AgentHosts{Queues: d, Own: "dw-agent-hosts"}
		n, err := hosts.Polling(context.Background(), workflows.AgentHostsPollingInput{Queue: "dw-agent-hosts", Within: time.Minute})
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		n, err = hosts.Polling(context.Background(), workflows.AgentHostsPollingInput{Queue: "other-agent-hosts", Within: time.Minute})
		if d.err == nil {
			require.NoError(t, err)
			assert.Zero(t, n, "another queue is asked of Temporal")
		} else {
			require.Error(t, err)
		}
	}
}
