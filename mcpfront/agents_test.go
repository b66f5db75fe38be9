package mcpfront

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/durawait/durawait/workflows"
)

// agentFront is a Front whose Temporal holds one running invocation (begun
// a minute ago), whose
// wait updates answer with updates in turn (an error, or accepted), and
// whose accepted updates' outcomes with gets in turn (an error, or the
// payload delivered), recording each update's options in sent.
func agentFront(t *testing.T, updates, gets []error, sent *[]client.UpdateWorkflowOptions) *Front {
	t.Helper()
	tc := &mocks.Client{}
	tc.On("DescribeWorkflowExecution", mock.Anything, mock.Anything, "").Return(&workflowservice.DescribeWorkflowExecutionResponse{
		WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
			StartTime: timestamppb.New(time.Now().Add(-time.Minute))},
	}, nil)
	tc.On("UpdateWorkflow", mock.Anything, mock.Anything).Return(
		func(_ context.Context, opts client.UpdateWorkflowOptions) client.WorkflowUpdateHandle {
			n := len(*sent)
			*sent = append(*sent, opts)
			if n < len(updates) && updates[n] != nil {
				return nil
			}
			h := &mocks.WorkflowUpdateHandle{}
			h.On("Get", mock.Anything, mock.Anything).Return(func(_ context.Context, out any) error {
				if len(gets) > 0 {
					err := gets[0]
					gets = gets[1:]
					if err != nil {
						return err
					}
				}
				*out.(*workflows.AgentWaitAnswer) = workflows.AgentWaitAnswer{InvocationPayload: workflows.InvocationPayload{InvocationID: opts.WorkflowID, Status: workflows.AgentSucceeded}}
				return nil
			})
			return h
		},
		func(_ context.Context, _ client.UpdateWorkflowOptions) error {
			if n := len(*sent) - 1; n < len(updates) {
				return updates[n]
			}
			return nil
		})
	// A single wait_agent is releasable: a call that hangs up releases its
	// wait, one that reports a blocker acks it.
	tc.On("SignalWorkflow", mock.Anything, mock.Anything, "", mock.Anything, mock.Anything).Return(nil)
	return New(Options{Temporal: tc, TaskQueue: "q", Agents: AgentOptions{WaitWindow: time.Minute}})
}

// signalled is a signal a test's mock engine took.
type signalled struct {
	id, name string
	arg      any
}

// releasableFront is a front whose engine answers every wait update with
// answer (or, with block, not until the call's context ends), and records
// the updates sent and the signals taken.
func releasableFront(t *testing.T, answer workflows.AgentWaitAnswer, block bool) (*Front, *[]client.UpdateWorkflowOptions, func() []signalled) {
	t.Helper()
	var (
		mu      sync.Mutex
		sent    []client.UpdateWorkflowOptions
		signals []signalled
	)
	tc := &mocks.Client{}
	tc.On("UpdateWorkflow", mock.Anything, mock.Anything).Return(
		func(_ context.Context, opts client.UpdateWorkflowOptions) client.WorkflowUpdateHandle {
			mu.Lock()
			sent = append(sent, opts)
			mu.Unlock()
			h := &mocks.WorkflowUpdateHandle{}
			h.On("Get", mock.Anything, mock.Anything).Return(func(ctx context.Context, out any) error {
				if block {
					<-ctx.Done()
					return ctx.Err()
				}
				*out.(*workflows.AgentWaitAnswer) = answer
				return nil
			})
			return h
		}, nil)
	tc.On("SignalWorkflow", mock.Anything, mock.Anything, "", mock.Anything, mock.Anything).Return(
		func(_ context.Context, id, _, name string, arg any) error {
			mu.Lock()
			signals = append(signals, signalled{id: id, name: name, arg: arg})
			mu.Unlock()
			return nil
		})
	taken := func() []signalled {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(signals)
	}
	return New(Options{Temporal: tc, TaskQueue: "q", Agents: AgentOptions{WaitWindow: time.Minute}}), &sent, taken
}

// A single wait_agent's wait is releasable; the blocker it reports is
// acked before the call answers, so the next wait does not report it
// again.
func TestAWaitAgentAcksTheBlockerItReports(t *testing.T) {
	id := workflows.InvocationID("", [16]byte{1})
	blocked := workflows.AgentWaitAnswer{InvocationPayload: workflows.InvocationPayload{
		InvocationID: id, Status: workflows.AgentRunning, Reason: workflows.AgentReasonExecutionBlocked,
		Error: &workflows.AgentError{Code: "permission_denied", Message: "Write"},
	}, PendingBlocker: "blocker-1"}
	f, sent, signals := releasableFront(t, blocked, false)
	res, err := f.handleWaitAgent(context.Background(), waitAgentRequest())
	require.NoError(t, err)
	require.False(t, res.IsError, resultText(res))
	require.Len(t, *sent, 1)
	req := (*sent)[0].Args[0].(workflows.AgentWaitRequest)
	assert.True(t, strings.HasPrefix(req.Release, "wait-agent-"), "the wait is releasable: %q", req.Release)
	require.Len(t, signals(), 1, "acked before the call answered")
	assert.Equal(t, signalled{id: id, name: workflows.AgentAckBlockerSignal, arg: workflows.AgentAckBlocker{Key: "blocker-1"}}, signals()[0])
}

// A call that hangs up releases its wait and acks nothing: a blocker
// stays for the next call.
func TestAWaitAgentWhoseCallerHangsUpReleasesItsWait(t *testing.T) {
	id := workflows.InvocationID("", [16]byte{1})
	f, sent, signals := releasableFront(t, workflows.AgentWaitAnswer{}, true)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := f.handleWaitAgent(ctx, waitAgentRequest())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotEmpty(t, *sent)
	req := (*sent)[0].Args[0].(workflows.AgentWaitRequest)
	require.Eventually(t, func() bool { return len(signals()) > 0 }, 10*time.Second, 5*time.Millisecond, "the wait is released")
	assert.Equal(t, []signalled{{id: id, name: workflows.AgentReleaseWaitSignal, arg: workflows.AgentReleaseWait{Key: req.Release}}}, signals(), "one release, no ack")
}

func waitAgentRequest() mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = "wait_agent"
	req.Params.Arguments = map[string]any{"invocation_id": workflows.InvocationID("", [16]byte{1})}
	return req
}

// A wait update the engine could not deliver (the invocation's host
// restarting took its workflow task, and the engine aborted the update)
// is sent again, under the same update ID, while the invocation runs: the
// call answers with the run's state, not "running but did not answer;
// call again" (the soak's wait_agent failures while durawait was up).
func TestAWaitUpdateTheEngineCouldNotDeliverIsSentAgain(t *testing.T) {
	for _, undelivered := range []error{
		serviceerror.NewWorkflowNotReady("Unable to perform workflow execution update due to unexpected workflow task failure."),
		serviceerror.NewUnavailable("workflow update was aborted"),
	} {
		var sent []client.UpdateWorkflowOptions
		f := agentFront(t, []error{undelivered, undelivered}, nil, &sent)
		res, err := f.handleWaitAgent(context.Background(), waitAgentRequest())
		require.NoError(t, err)
		require.False(t, res.IsError, "%v: %s", undelivered, resultText(res))
		var out workflows.InvocationPayload
		require.NoError(t, json.Unmarshal([]byte(resultText(res)), &out))
		assert.Equal(t, workflows.AgentSucceeded, out.Status)
		require.Len(t, sent, 3, "two undelivered sends, then the delivered one")
		assert.NotEmpty(t, sent[0].UpdateID)
		assert.Equal(t, sent[0].UpdateID, sent[2].UpdateID, "sent again under its name, so an accepted one is re-attached")
		first, again := sent[0].Args[0].(workflows.AgentWaitRequest), sent[2].Args[0].(workflows.AgentWaitRequest)
		assert.Less(t, again.Window, first.Window, "sent again, it asks only for what is left of the call's window")
	}
}

// A call whose window runs out while the engine still cannot deliver its
// wait (a restarted engine with a backlog aborting updates) answers as a
// window's end does for a running invocation (running, wait_elapsed), not
// with an error: the caller calls again, as after any window.
func TestACallWhoseWindowRanOutUndeliveredAnswersWaitElapsed(t *testing.T) {
	var sent []client.UpdateWorkflowOptions
	undelivered := make([]error, 1000)
	for i := range undelivered {
		undelivered[i] = serviceerror.NewUnavailable("workflow update was aborted")
	}
	f := agentFront(t, undelivered, nil, &sent)
	f.opts.Agents.WaitWindow = 300 * time.Millisecond
	res, err := f.handleWaitAgent(context.Background(), waitAgentRequest())
	require.NoError(t, err)
	require.False(t, res.IsError, resultText(res))
	var out workflows.InvocationPayload
	require.NoError(t, json.Unmarshal([]byte(resultText(res)), &out))
	assert.Equal(t, workflows.AgentRunning, out.Status)
	assert.Equal(t, workflows.AgentReasonWaitElapsed, out.Reason)
	assert.Equal(t, workflows.InvocationID("", [16]byte{1}), out.InvocationID)
	assert.GreaterOrEqual(t, out.ElapsedMs, time.Minute.Milliseconds(), "counted from the invocation's start")
	assert.Less(t, out.ElapsedMs, time.Hour.Milliseconds())
	assert.NotEmpty(t, sent, "the wait was sent")

	// A wait the invocation accepted but whose answer never came (it may
	// have carried a blocker away) still answers as before.
	sent = nil
	f = agentFront(t, nil, []error{serviceerror.NewUnavailable("workflow update was aborted"), serviceerror.NewUnavailable("workflow update was aborted"),
		serviceerror.NewUnavailable("workflow update was aborted"), serviceerror.NewUnavailable("workflow update was aborted"),
		serviceerror.NewUnavailable("workflow update was aborted"), serviceerror.NewUnavailable("workflow update was aborted"),
		serviceerror.NewUnavailable("workflow update was aborted"), serviceerror.NewUnavailable("workflow update was aborted")}, &sent)
	f.opts.Agents.WaitWindow = 300 * time.Millisecond
	res, err = f.handleWaitAgent(context.Background(), waitAgentRequest())
	require.NoError(t, err)
	assert.True(t, res.IsError, resultText(res))
	assert.Contains(t, resultText(res), "call again")
}

// An accepted wait update whose outcome the engine could not deliver (its
// mutable state evicted, the poll aborted) is sent again under its name,
// which re-attaches to it: the call answers with the run's state.
func TestAnAcceptedWaitUpdateWhoseOutcomeWasLostIsReattached(t *testing.T) {
	var sent []client.UpdateWorkflowOptions
	f := agentFront(t, nil, []error{serviceerror.NewUnavailable("workflow update was aborted")}, &sent)
	res, err := f.handleWaitAgent(context.Background(), waitAgentRequest())
	require.NoError(t, err)
	require.False(t, res.IsError, resultText(res))
	require.Len(t, sent, 2)
	assert.Equal(t, sent[0].UpdateID, sent[1].UpdateID)
}

// A call whose invocation closed while its update was being sent again
// stops sending, and answers from the closed invocation.
func TestAWaitUpdateIsNotSentAgainToAClosedInvocation(t *testing.T) {
	tc := &mocks.Client{}
	tc.On("DescribeWorkflowExecution", mock.Anything, mock.Anything, "").Return(&workflowservice.DescribeWorkflowExecutionResponse{
		WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED},
	}, nil)
	updates := 0
	tc.On("UpdateWorkflow", mock.Anything, mock.Anything).Return(nil, func(context.Context, client.UpdateWorkflowOptions) error {
		updates++
		return serviceerror.NewUnavailable("workflow update was aborted")
	})
	run := &mocks.WorkflowRun{}
	run.On("Get", mock.Anything, mock.Anything).Return(func(_ context.Context, out any) error {
		*out.(*workflows.InvocationPayload) = workflows.InvocationPayload{Status: workflows.AgentSucceeded}
		return nil
	})
	tc.On("GetWorkflow", mock.Anything, mock.Anything, "").Return(run)
	f := New(Options{Temporal: tc, TaskQueue: "q", Agents: AgentOptions{WaitWindow: time.Minute}})
	res, err := f.handleWaitAgent(context.Background(), waitAgentRequest())
	require.NoError(t, err)
	require.False(t, res.IsError, resultText(res))
	assert.Equal(t, 1, updates, "sent once: the invocation had closed")
}

// A call whose caller hangs up while its update is being sent again stops.
func TestAWaitUpdateIsNotSentAgainForACallerWhoLeft(t *testing.T) {
	var sent []client.UpdateWorkflowOptions
	aborted := serviceerror.NewUnavailable("workflow update was aborted")
	f := agentFront(t, []error{aborted, aborted, aborted, aborted, aborted, aborted, aborted, aborted}, nil, &sent)
	ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel()
	_, err := f.handleWaitAgent(ctx, waitAgentRequest())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, len(sent), 8, "the sends stopped with the call")
}

// The update's own error and the engine's word that the request is wrong
// are not sent again: the call answers at once.
func TestAWaitUpdateThatWillNotPassIsNotSentAgain(t *testing.T) {
	for _, final := range []error{
		temporal.NewApplicationError("the handler failed", "x"),
		serviceerror.NewInvalidArgument("bad update"),
	} {
		var sent []client.UpdateWorkflowOptions
		f := agentFront(t, []error{final}, nil, &sent)
		res, err := f.handleWaitAgent(context.Background(), waitAgentRequest())
		require.NoError(t, err)
		assert.True(t, res.IsError, "%v", final)
		assert.Len(t, sent, 1, "%v: sent once", final)
	}
}
