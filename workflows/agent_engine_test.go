package workflows

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/durawait/durawait/internal/engine"
)

// An operator's cancel that reaches a CLI as it succeeds (the run reports
// success after the cancel request) leaves the invocation Completed with
// its result, not Canceled. The test environment cannot deliver a
// success after a cancel request, so this runs on the embedded engine.
func TestAnOperatorsCancelAfterTheRunSucceededKeepsTheResult(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded engine")
	}
	e, err := engine.Start(engine.Options{
		DataDir: t.TempDir(), Namespace: "default", SearchAttributes: SearchAttributes(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LogLevel: slog.LevelError,
	})
	require.NoError(t, err)
	defer e.Stop()
	c, err := client.Dial(client.Options{HostPort: e.Addr(), Namespace: "default",
		Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	require.NoError(t, err)
	defer c.Close()

	const queue = "agent-cancel"
	running := make(chan struct{}, 1)
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(AgentInvocation, workflow.RegisterOptions{Name: AgentWorkflowName})
	w.RegisterActivityWithOptions(func(context.Context) (string, error) { return queue, nil },
		activity.RegisterOptions{Name: ClaimAgentHostActivity})
	w.RegisterActivityWithOptions(func(ctx context.Context, _ RunAgentInput) (AgentFinal, error) {
		running <- struct{}{}
		tick := time.NewTicker(100 * time.Millisecond) // heartbeats carry the cancel request
		defer tick.Stop()
		for ctx.Err() == nil {
			activity.RecordHeartbeat(ctx, AgentLive{})
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
		return AgentFinal{Status: AgentSucceeded, Output: "all done"}, nil
	}, activity.RegisterOptions{Name: RunAgentActivityName})
	require.NoError(t, w.Start())
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "agent/cancel-after-success", TaskQueue: queue},
		AgentWorkflowName, agentInput)
	require.NoError(t, err)
	select {
	case <-running:
	case <-ctx.Done():
		t.Fatal("the run never started")
	}
	require.NoError(t, c.CancelWorkflow(ctx, run.GetID(), ""))
	var final InvocationPayload
	require.NoError(t, run.Get(ctx, &final), "completed, not Canceled")
	assert.Equal(t, AgentSucceeded, final.Status)
	desc, err := c.DescribeWorkflowExecution(ctx, run.GetID(), "")
	require.NoError(t, err)
	var state string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[SearchAttrState], &state))
	assert.Equal(t, string(StateMatched), state)
}
