//go:build replayrecord

package workflows

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// TestRecordClaimHistories records the agent host claim's paths past its
// first offer on the agent hosts' queue, on a real embedded engine with
// stand-in activities (each takes the claim's real 2 minutes):
//
//   - agent_claim_shared: no agent host took the first offer and none polls;
//     the claim is taken on the shared queue (a host of an earlier release).
//   - agent_claim_hosts_polling: no agent host took the first offer, but
//     Temporal saw hosts poll; the claim is offered to them again, and one
//     takes it (recorded from the release with
//     durawait-agent-claim-hosts-polling on).
//
// (v5_agent_claim_shared was recorded by this file at 5de66a6, the
// release before the look, with a stand-in of the look's own input type.)
// Run with: go test -tags replayrecord -run TestRecordClaimHistories ./workflows/
// (DURAWAIT_REPLAY_PREFIX names the files' prefix, e.g. "v6_").
func TestRecordClaimHistories(t *testing.T) {
	c := startReplayEngine(t)

	const queue = "replay"
	const pollingID, sharedID = "agent/claim_hosts_polling", "agent/claim_shared"
	var looked atomic.Bool
	w := worker.New(c, queue, worker.Options{})
	RegisterWorkflows(w)
	claim := func(ctx context.Context) (string, error) { return queue, nil }
	w.RegisterActivityWithOptions(claim, activity.RegisterOptions{Name: ClaimAgentHostActivity})
	// A local activity: called with the workflow's own value, not decoded.
	w.RegisterActivityWithOptions(func(ctx context.Context, in AgentHostsPollingInput) (int, error) {
		if activity.GetInfo(ctx).WorkflowExecution.ID == pollingID {
			looked.Store(true)
			return 1, nil
		}
		return 0, nil
	}, activity.RegisterOptions{Name: "AgentHostsPolling"})
	w.RegisterActivityWithOptions(func(ctx context.Context, in RunAgentInput) (AgentFinal, error) {
		return AgentFinal{Status: AgentSucceeded, Output: "done", SessionID: "s1"}, nil
	}, activity.RegisterOptions{Name: RunAgentActivityName})
	require.NoError(t, w.Start())
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	agentIn := AgentInvocationInput{Spec: AgentSpec{Provider: "claude", Prompt: "say hi", Cwd: "/tmp"}, MaxRun: time.Minute}
	var runs []client.WorkflowRun
	for _, id := range []string{pollingID, sharedID} {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, StaticSummary: "replay " + id}, AgentWorkflowName, agentIn)
		require.NoError(t, err)
		runs = append(runs, run)
	}
	// The agent host comes once the hosts were looked at (releases with
	// the look): the claim's second offer on its queue is taken.
	go func() {
		for !looked.Load() && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
		host := worker.New(c, AgentClaimQueue(queue), worker.Options{})
		host.RegisterActivityWithOptions(claim, activity.RegisterOptions{Name: ClaimAgentHostActivity})
		if host.Start() == nil {
			<-ctx.Done()
			host.Stop()
		}
	}()
	var p InvocationPayload
	require.NoError(t, runs[1].Get(ctx, &p))
	require.Equal(t, AgentSucceeded, p.Status, "%+v", p.Error)
	writeReplayHistory(t, ctx, c, "agent_claim_shared", sharedID)
	if looked.Load() {
		require.NoError(t, runs[0].Get(ctx, &p))
		require.Equal(t, AgentSucceeded, p.Status, "%+v", p.Error)
		writeReplayHistory(t, ctx, c, "agent_claim_hosts_polling", pollingID)
	}
}
