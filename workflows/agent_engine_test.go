package workflows

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/durawait/durawait/internal/engine"
)

// An operator's cancel of an agent's workflow, on the embedded engine (the
// test environment drops a cancelled activity's details and cannot deliver
// a success after a cancel request). The cancel reaches the run's host as
// a StopLoop on its queue. With a wait_agent in flight, the wait answers
// and the workflow ends Canceled with the payload, its output so far, in
// the details. One that reaches a CLI as it succeeds leaves the invocation
// Completed with its result.
func TestAnOperatorsCancelOfAnAgentOnTheEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded engine")
	}
	e, err := engine.Start(engine.Options{
		DataDir: t.TempDir(), Namespace: "default", SearchAttributes: SearchAttributes(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LogLevel: slog.LevelError,
	})
	require.NoError(t, err)
	defer e.Stop()
	c, err := client.Dial(client.Options{HostPort: e.Addr(), Namespace: "default", ConnectionOptions: client.ConnectionOptions{TLS: e.ClientTLS()},
		Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	require.NoError(t, err)
	defer c.Close()

	const queue = "agent-cancel"
	running := make(chan struct{}, 1)
	// The run's host: the run ends when its workflow stops it (StopLoop),
	// as the host's runner stops the CLI.
	var mu sync.Mutex
	stops := map[string]chan struct{}{}
	stopOf := func(id string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if stops[id] == nil {
			stops[id] = make(chan struct{})
		}
		return stops[id]
	}
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(AgentInvocation, workflow.RegisterOptions{Name: AgentWorkflowName})
	claims := worker.New(c, AgentClaimQueue(queue), worker.Options{})
	claims.RegisterActivityWithOptions(func(context.Context) (AgentHostClaim, error) { return AgentHostClaim{Host: "h"}, nil },
		activity.RegisterOptions{Name: ClaimAgentHostActivity})
	require.NoError(t, claims.Start())
	defer claims.Stop()
	host := worker.New(c, HostQueue(queue, "h"), worker.Options{})
	host.RegisterActivityWithOptions(func(ctx context.Context, in RunAgentInput) (AgentFinal, error) {
		running <- struct{}{}
		<-stopOf(in.InvocationID)
		if in.InvocationID == "agent/cancel-in-flight" {
			return AgentFinal{}, temporal.NewCanceledError(AgentFinal{Output: "half done", SessionID: "s2"})
		}
		return AgentFinal{Status: AgentSucceeded, Output: "all done"}, nil
	}, activity.RegisterOptions{Name: RunAgentActivityName})
	host.RegisterActivityWithOptions(func(_ context.Context, in LoopRef) error {
		close(stopOf(in.WorkflowID))
		return nil
	}, activity.RegisterOptions{Name: StopLoopActivityName})
	require.NoError(t, host.Start())
	defer host.Stop()
	require.NoError(t, w.Start())
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func(id string) client.WorkflowRun {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, AgentWorkflowName, agentInput)
		require.NoError(t, err)
		select {
		case <-running:
		case <-ctx.Done():
			t.Fatal("the run never started")
		}
		return run
	}
	state := func(id string) string {
		desc, err := c.DescribeWorkflowExecution(ctx, id, "")
		require.NoError(t, err)
		var s string
		require.NoError(t, converter.GetDefaultDataConverter().FromPayload(desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[SearchAttrState], &s))
		return s
	}

	t.Run("a wait in flight", func(t *testing.T) {
		run := start("agent/cancel-in-flight")
		wait, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: AgentWaitUpdate,
			Args: []any{AgentWaitRequest{Window: time.Minute}}, WaitForStage: client.WorkflowUpdateStageAccepted})
		require.NoError(t, err)
		require.NoError(t, c.CancelWorkflow(ctx, run.GetID(), ""))
		var answered InvocationPayload
		require.NoError(t, wait.Get(ctx, &answered), "the wait in flight answers")
		assert.Equal(t, AgentCancelled, answered.Status)

		err = run.Get(ctx, nil)
		var canceled *temporal.CanceledError
		require.ErrorAs(t, err, &canceled)
		var p InvocationPayload
		require.NoError(t, canceled.Details(&p), "the details are the payload")
		assert.Equal(t, AgentCancelled, p.Status)
		require.NotNil(t, p.Output)
		assert.Equal(t, "half done", *p.Output)
		assert.Equal(t, "s2", p.SessionID)
		assert.Equal(t, string(StateCancelled), state(run.GetID()))
	})

	t.Run("after the run succeeded", func(t *testing.T) {
		run := start("agent/cancel-after-success")
		require.NoError(t, c.CancelWorkflow(ctx, run.GetID(), ""))
		var final InvocationPayload
		require.NoError(t, run.Get(ctx, &final), "completed, not Canceled")
		assert.Equal(t, AgentSucceeded, final.Status)
		assert.Equal(t, string(StateMatched), state(run.GetID()))
	})
}
