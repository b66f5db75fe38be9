//go:build replayrecord

package workflows

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/durawait/durawait/internal/engine"
)

// TestRecordReplayHistories runs each workflow type on a real embedded
// engine with stand-in activities and writes its history as JSON into
// testdata/replay, for TestReplayRecordedHistories. Histories recorded by a
// release are kept as they are: they are what its running waits look like.
// It covers what the tools cannot reach (an operator's cancel with a wait
// in flight, the catalog workflow); TestRecordReplayHistories in
// internal/e2e records the rest through the real binary.
// Run with: go test -tags replayrecord -run TestRecordReplayHistories ./workflows/
// (DURAWAIT_REPLAY_PREFIX names the files' prefix, e.g. "v2_").
func TestRecordReplayHistories(t *testing.T) {
	c := startReplayEngine(t)

	const queue = "replay"
	release := make(chan struct{})
	running := make(chan string, 8) // workflow IDs whose blocking activity runs
	w := worker.New(c, queue, worker.Options{})
	RegisterWorkflows(w)
	w.RegisterActivityWithOptions(func(ctx context.Context, in PollInput) (WaitForResult, error) {
		if in.Spec.Until.Pattern == "block" {
			running <- activity.GetInfo(ctx).WorkflowExecution.ID
			for {
				activity.RecordHeartbeat(ctx, PollProgress{Samples: 1, HasObservation: true, LastObservation: "Pending"})
				select {
				case <-ctx.Done():
					return WaitForResult{}, ctx.Err()
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
		return WaitForResult{Reason: WaitReasonMatched, Condition: ConditionMatches, LastObservation: "Running", Samples: 3, ElapsedSec: 4, EffectiveMaxWaitSec: in.Spec.MaxWaitSec}, nil
	}, activity.RegisterOptions{Name: PollProbeActivityName})
	w.RegisterActivityWithOptions(func(ctx context.Context, in WatchPaneInput) (TextWaitOutcome, error) {
		return TextWaitOutcome{Result: NewTextResult(in.Spec, true, "baseline", "same_generation")}, nil
	}, activity.RegisterOptions{Name: WatchPaneActivityName})
	w.RegisterActivityWithOptions(func(ctx context.Context) (string, error) { return queue, nil },
		activity.RegisterOptions{Name: ClaimAgentHostActivity})
	w.RegisterActivityWithOptions(func(ctx context.Context, in RunAgentInput) (AgentFinal, error) {
		running <- in.InvocationID
		for {
			activity.RecordHeartbeat(ctx, AgentLive{})
			select {
			case <-ctx.Done():
				return AgentFinal{}, ctx.Err()
			case <-release:
				return AgentFinal{Status: AgentSucceeded, Output: "done", SessionID: "s1"}, nil
			case <-time.After(200 * time.Millisecond):
			}
		}
	}, activity.RegisterOptions{Name: RunAgentActivityName})
	w.RegisterActivityWithOptions(func(ctx context.Context, in DownstreamCall) (DownstreamCallResult, error) {
		return DownstreamCallResult{Result: []byte(`{"content":[]}`)}, nil
	}, activity.RegisterOptions{Name: CallDownstreamToolActivityName})
	w.RegisterActivityWithOptions(func(ctx context.Context, in ListPanesInput) (ListPanesOutput, error) {
		return ListPanesOutput{Panes: []Pane{{PaneID: "%1", Generation: "g1"}}}, nil
	}, activity.RegisterOptions{Name: ListPanesActivityName})
	require.NoError(t, w.Start())
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func(id, name string, in any) client.WorkflowRun {
		attrs := []temporal.SearchAttributeUpdate{KeyTool.ValueSet("replay")}
		if name == WaitForWorkflowName || name == WaitForTextWorkflowName {
			attrs = append(attrs, StartedRunning()) // as a front starts them
		}
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, StaticSummary: "replay " + id,
			TypedSearchAttributes: temporal.NewSearchAttributes(attrs...)}, name, in)
		require.NoError(t, err)
		return run
	}
	spec := WaitForSpec{Probe: Probe{Tool: "k8s.kubectl_get", Args: []byte(`{"name":"pod"}`)},
		Until: Until{Kind: ConditionMatches, Pattern: "Running"}, PollSec: 1, MaxWaitSec: 30}
	blockSpec := spec
	blockSpec.Until.Pattern = "block"

	histories := map[string]string{}
	record := func(file string, run client.WorkflowRun) {
		_ = run.Get(ctx, nil)
		histories[file] = run.GetID()
	}

	record("waitfor_matched", start("wait_for/matched", WaitForWorkflowName, WaitForInput{Spec: spec}))

	run := start("wait_for/cancelled", WaitForWorkflowName, WaitForInput{Spec: blockSpec})
	require.Equal(t, run.GetID(), <-running)
	require.NoError(t, c.CancelWorkflow(ctx, run.GetID(), ""))
	record("waitfor_cancelled", run)

	record("waitfortext_matched", start("wait_for_text/matched", WaitForTextWorkflowName,
		WaitForTextInput{Spec: TextWaitSpec{Target: PaneTarget{PaneID: "%1", Generation: "g1"}, Text: "ready"}, HostQueue: queue, MaxWait: 30 * time.Second}))

	agentIn := AgentInvocationInput{Spec: AgentSpec{Provider: "claude", Prompt: "say hi", Cwd: "/tmp"}, MaxRun: time.Minute}
	// An operator cancels the workflow itself while a wait_agent waits:
	// the wait answers, and the workflow ends Canceled with the payload.
	run = start("agent/operator_cancelled", AgentWorkflowName, agentIn)
	require.Equal(t, run.GetID(), <-running)
	wait, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: AgentWaitUpdate,
		Args: []any{AgentWaitRequest{Window: 30 * time.Second}}, WaitForStage: client.WorkflowUpdateStageAccepted})
	require.NoError(t, err)
	require.NoError(t, c.CancelWorkflow(ctx, run.GetID(), ""))
	var cancelled InvocationPayload
	require.NoError(t, wait.Get(ctx, &cancelled))
	require.Equal(t, AgentCancelled, cancelled.Status)
	record("agent_operator_cancelled", run)

	run = start("agent/succeeded", AgentWorkflowName, agentIn)
	require.Equal(t, run.GetID(), <-running)
	require.NoError(t, c.SignalWorkflow(ctx, run.GetID(), "", AgentBlockerSignal, AgentError{Code: "permission_required", Message: "needs approval"}))
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: AgentWaitUpdate,
		Args: []any{AgentWaitRequest{Window: 10 * time.Second}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	var p InvocationPayload
	require.NoError(t, h.Get(ctx, &p))
	close(release)
	record("agent_succeeded", run)

	run = start("agent/cancelled", AgentWorkflowName, agentIn)
	require.Equal(t, run.GetID(), <-running)
	require.NoError(t, c.SignalWorkflow(ctx, run.GetID(), "", AgentCancelSignal, nil))
	record("agent_cancelled", run)

	record("call", start("call/one", CallDownstreamToolWorkflowName, DownstreamCall{Server: "k8s", Tool: "kubectl_get", Arguments: []byte(`{}`)}))
	record("list_panes", start("list_panes/one", ListPanesWorkflowName, ListPanesInput{HostQueue: queue}))

	run = start("durawait-catalog/replay", CatalogWorkflowName, DownstreamCatalog{})
	require.NoError(t, c.SignalWorkflow(ctx, run.GetID(), "", CatalogSignalName, DownstreamCatalog{TmuxHostQueue: queue}))
	waitForEvent(t, ctx, c, run.GetID(), "WorkflowExecutionSignaled")
	require.NoError(t, c.CancelWorkflow(ctx, run.GetID(), ""))
	record("catalog", run)

	for file, id := range histories {
		writeReplayHistory(t, ctx, c, file, id)
	}
}

// startReplayEngine starts an embedded engine for the test and returns a
// client of its default namespace; both end with the test.
func startReplayEngine(t *testing.T) client.Client {
	e, err := engine.Start(engine.Options{
		DataDir: t.TempDir(), Namespace: "default", SearchAttributes: SearchAttributes(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LogLevel: slog.LevelError,
	})
	require.NoError(t, err)
	t.Cleanup(e.Stop)
	c, err := client.Dial(client.Options{HostPort: e.Addr(), Namespace: "default"})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// writeReplayHistory writes the history of workflow id as
// testdata/replay/<DURAWAIT_REPLAY_PREFIX><file>.json.
func writeReplayHistory(t *testing.T, ctx context.Context, c client.Client, file, id string) {
	var hist historypb.History
	iter := c.GetWorkflowHistory(ctx, id, "", false, 0)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		hist.Events = append(hist.Events, ev)
	}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&hist)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join("testdata", "replay", os.Getenv("DURAWAIT_REPLAY_PREFIX")+file+".json"), data, 0o644))
}

// waitForEvent polls a workflow's history until an event of the type
// (its name without the EVENT_TYPE_ prefix, e.g. "ActivityTaskStarted") is
// in it.
func waitForEvent(t *testing.T, ctx context.Context, c client.Client, id, eventType string) {
	t.Helper()
	for ctx.Err() == nil {
		iter := c.GetWorkflowHistory(ctx, id, "", false, 0)
		for iter.HasNext() {
			ev, err := iter.Next()
			require.NoError(t, err)
			if ev.GetEventType().String() == eventType {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no %s event in %s", eventType, id)
}
