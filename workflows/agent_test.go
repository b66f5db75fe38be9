package workflows

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

func claimHostStub(context.Context) (AgentHostClaim, error) { panic("mocked") }
func runAgentStub(context.Context, RunAgentInput) (AgentFinal, error) {
	panic("mocked")
}
func agentLiveStub(context.Context, AgentLiveInput) (AgentLive, error) { panic("mocked") }

// hostClaim is the claim the test agent host answers.
var hostClaim = AgentHostClaim{Host: "h1", Spool: "/var/spool/durawait"}

// registerAgentActivities registers stand-ins for the invocation's
// activities: a run that the mock decides, a stop that is taken, and a
// host that cannot say what the CLI does.
func registerAgentActivities(env *testsuite.TestWorkflowEnvironment) {
	env.RegisterActivityWithOptions(claimHostStub, activity.RegisterOptions{Name: ClaimAgentHostActivity})
	env.RegisterActivityWithOptions(runAgentStub, activity.RegisterOptions{Name: RunAgentActivityName})
	env.RegisterActivityWithOptions(stopLoopStub, activity.RegisterOptions{Name: StopLoopActivityName})
	env.RegisterActivityWithOptions(agentLiveStub, activity.RegisterOptions{Name: AgentLiveActivityName})
	env.RegisterActivityWithOptions(answerAgentStub, activity.RegisterOptions{Name: AnswerAgentActivityName})
	env.OnActivity(StopLoopActivityName, mock.Anything, mock.Anything).Return(nil).Maybe()
	env.OnActivity(AgentLiveActivityName, mock.Anything, mock.Anything).
		Return(AgentLive{}, temporal.NewApplicationError("the run does not follow its CLI on this worker now", "")).Maybe()
}

func newAgentEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(AgentInvocation, workflow.RegisterOptions{Name: AgentWorkflowName})
	registerAgentActivities(env)
	env.OnActivity(ClaimAgentHostActivity, mock.Anything).Return(hostClaim, nil)
	return env
}

var agentInput = AgentInvocationInput{
	Spec:   AgentSpec{Provider: "claude", Prompt: "fix it", Cwd: "/srv/work"},
	MaxRun: time.Hour,
}

// waitAt sends a wait update of window at offset and records its answer.
func waitAt(env *testsuite.TestWorkflowEnvironment, offset, window time.Duration, got *InvocationPayload, done *bool) {
	waitWith(env, offset, AgentWaitRequest{Window: window}, got, done)
}

// waitWith sends the wait update req at offset and records its answer.
func waitWith(env *testsuite.TestWorkflowEnvironment, offset time.Duration, req AgentWaitRequest, got *InvocationPayload, done *bool) {
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(AgentWaitUpdate, "", &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { panic(err) },
			OnComplete: func(v any, err error) {
				if err != nil {
					panic(err)
				}
				*got = v.(AgentWaitAnswer).InvocationPayload
				*done = true
			},
		}, req)
	}, offset)
}

func TestWaitReturnsEarlyWhenTheRunFinishes(t *testing.T) {
	env := newAgentEnv(t)
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(90*time.Second).
		Return(AgentFinal{Status: AgentSucceeded, Output: "all done", SessionID: "s1"}, nil)
	var got InvocationPayload
	var done bool
	waitAt(env, time.Second, 5*time.Minute, &got, &done)
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)

	require.True(t, env.IsWorkflowCompleted())
	require.True(t, done)
	assert.Equal(t, AgentSucceeded, got.Status)
	assert.Equal(t, AgentReasonFinished, got.Reason)
	require.NotNil(t, got.Output)
	assert.Equal(t, "all done", *got.Output)
	assert.Equal(t, "s1", got.SessionID)
	assert.InDelta(t, 90_000, got.ElapsedMs, 2000, "returned at the finish, not at the window's end")

	var final InvocationPayload
	require.NoError(t, env.GetWorkflowResult(&final))
	assert.Equal(t, got, final)
}

func TestWaitWindowElapses(t *testing.T) {
	env := newAgentEnv(t)
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(time.Hour).
		Return(AgentFinal{Status: AgentSucceeded}, nil)
	var got InvocationPayload
	var done bool
	waitAt(env, 0, 5*time.Minute, &got, &done)
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)

	require.True(t, done)
	assert.Equal(t, AgentRunning, got.Status)
	assert.Equal(t, AgentReasonWaitElapsed, got.Reason)
	assert.InDelta(t, 300_000, got.ElapsedMs, 2000)
	assert.Nil(t, got.Output)
}

// A wait whose window passes asks the run's host what the CLI is doing
// now, and answers with it, aged at the answer.
func TestWaitWindowElapsesWithWhatTheCLIIsDoing(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(AgentInvocation, workflow.RegisterOptions{Name: AgentWorkflowName})
	env.RegisterActivityWithOptions(claimHostStub, activity.RegisterOptions{Name: ClaimAgentHostActivity})
	env.RegisterActivityWithOptions(runAgentStub, activity.RegisterOptions{Name: RunAgentActivityName})
	env.RegisterActivityWithOptions(agentLiveStub, activity.RegisterOptions{Name: AgentLiveActivityName})
	env.OnActivity(ClaimAgentHostActivity, mock.Anything).Return(hostClaim, nil)
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(time.Hour).
		Return(AgentFinal{Status: AgentSucceeded}, nil)
	var asked AgentLiveInput
	var askedQueue string
	env.OnActivity(AgentLiveActivityName, mock.Anything, mock.Anything).
		Return(func(ctx context.Context, in AgentLiveInput) (AgentLive, error) {
			asked, askedQueue = in, activity.GetInfo(ctx).TaskQueue
			now := env.Now()
			return AgentLive{SessionID: "s9", Reply: "editing main.go", ReplyAt: now.Add(-4 * time.Second),
				Activity: &AgentActivity{Kind: "tool", ToolName: "Edit"}, ActivityAt: now.Add(-time.Second)}, nil
		})
	var got InvocationPayload
	var done bool
	waitAt(env, 0, 5*time.Minute, &got, &done)
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)

	require.True(t, done)
	assert.Equal(t, AgentReasonWaitElapsed, got.Reason)
	assert.Equal(t, HostQueue("default-test-taskqueue", "h1"), askedQueue, "asked the run's host")
	assert.Equal(t, "default-test-workflow-id", asked.InvocationID)
	require.NotNil(t, got.Output)
	assert.Equal(t, "editing main.go", *got.Output)
	require.NotNil(t, got.OutputAgeMs)
	assert.InDelta(t, 4000, *got.OutputAgeMs, 1000)
	require.NotNil(t, got.Activity)
	assert.Equal(t, "Edit", got.Activity.ToolName)
	assert.Equal(t, "s9", got.SessionID)
}

// The run goes to the claiming host's queue with its spool and the
// invocation's deadline, as one activity with no heartbeat: the host stops
// the CLI at max_run_sec, and Temporal's bound (max_run_sec plus
// LoopGrace) stands behind it.
func TestTheRunGoesToTheClaimingHostWithItsSpoolAndDeadline(t *testing.T) {
	env := newAgentEnv(t)
	var in RunAgentInput
	var info activity.Info
	start := env.Now()
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).
		Return(func(ctx context.Context, got RunAgentInput) (AgentFinal, error) {
			in, info = got, activity.GetInfo(ctx)
			return AgentFinal{Status: AgentSucceeded}, nil
		})
	u := recordUpserts(env)
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)

	require.True(t, env.IsWorkflowCompleted())
	assert.Equal(t, HostQueue("default-test-taskqueue", "h1"), info.TaskQueue)
	assert.Equal(t, time.Duration(0), info.HeartbeatTimeout)
	assert.Equal(t, "/var/spool/durawait", in.Spool)
	assert.WithinDuration(t, start.Add(agentInput.MaxRun), in.Deadline, time.Second)
	assert.WithinDuration(t, start.Add(agentInput.MaxRun+LoopGrace), info.Deadline, time.Second)
	assert.Contains(t, u.hosts, "h1", "the invocation says its host")
}

func TestEachBlockerCategoryWakesOnce(t *testing.T) {
	env := newAgentEnv(t)
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(time.Hour).
		Return(AgentFinal{Status: AgentSucceeded}, nil)
	signal := func(at time.Duration, code string) {
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(AgentBlockerSignal, AgentError{Code: code, Message: code + " at " + at.String()})
		}, at)
	}
	signal(10*time.Second, BlockerPermission)
	signal(20*time.Second, BlockerPermission) // the same category again
	signal(400*time.Second, BlockerRateLimit) // a new one
	var first, second, third InvocationPayload
	var d1, d2, d3 bool
	waitAt(env, time.Second, 5*time.Minute, &first, &d1)     // woken by the permission blocker at 10s
	waitAt(env, 15*time.Second, 5*time.Minute, &second, &d2) // not woken by the repeat: runs its window
	waitAt(env, 330*time.Second, 5*time.Minute, &third, &d3) // woken by the rate limit at 400s
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)

	require.True(t, d1 && d2 && d3)
	assert.Equal(t, AgentReasonExecutionBlocked, first.Reason)
	assert.Equal(t, AgentRunning, first.Status, "a blocker leaves the CLI running")
	assert.Equal(t, &AgentError{Code: BlockerPermission, Message: "permission_denied at 10s"}, first.Error)
	assert.InDelta(t, 10_000, first.ElapsedMs, 1000)

	assert.Equal(t, AgentReasonWaitElapsed, second.Reason)
	assert.InDelta(t, 315_000, second.ElapsedMs, 1000)

	assert.Equal(t, AgentReasonExecutionBlocked, third.Reason)
	assert.Equal(t, BlockerRateLimit, third.Error.Code)
	assert.InDelta(t, 400_000, third.ElapsedMs, 1000)
}

func TestABlockerBeforeTheWaitIsDeliveredToTheNextWait(t *testing.T) {
	env := newAgentEnv(t)
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(time.Hour).
		Return(AgentFinal{Status: AgentSucceeded}, nil)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(AgentBlockerSignal, AgentError{Code: BlockerQuestion, Message: "which branch?"})
	}, 5*time.Second)
	var got InvocationPayload
	var done bool
	waitAt(env, time.Minute, 5*time.Minute, &got, &done)
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)
	require.True(t, done)
	assert.Equal(t, AgentReasonExecutionBlocked, got.Reason)
	assert.InDelta(t, 60_000, got.ElapsedMs, 1000, "returned at once")
}

func TestCancelStopsTheRun(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(AgentInvocation, workflow.RegisterOptions{Name: AgentWorkflowName})
	env.RegisterActivityWithOptions(claimHostStub, activity.RegisterOptions{Name: ClaimAgentHostActivity})
	env.RegisterActivityWithOptions(runAgentStub, activity.RegisterOptions{Name: RunAgentActivityName})
	env.RegisterActivityWithOptions(stopLoopStub, activity.RegisterOptions{Name: StopLoopActivityName})
	env.OnActivity(ClaimAgentHostActivity, mock.Anything).Return(hostClaim, nil)
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(time.Hour).
		Return(AgentFinal{}, temporal.NewCanceledError(AgentFinal{Output: "partial work", SessionID: "s2"}))
	var stopQueue string
	env.OnActivity(StopLoopActivityName, mock.Anything, mock.Anything).
		Return(func(ctx context.Context, _ LoopRef) error {
			stopQueue = activity.GetInfo(ctx).TaskQueue
			return nil
		})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(AgentCancelSignal, nil) }, 30*time.Second)
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)
	assert.Equal(t, HostQueue("default-test-taskqueue", "h1"), stopQueue, "the run's host was asked to stop the CLI")

	var canceled *temporal.CanceledError
	require.ErrorAs(t, env.GetWorkflowError(), &canceled, "cancel_agent closes the invocation Canceled")
	final := closedPayload(t, env)
	assert.Equal(t, AgentCancelled, final.Status)
	assert.Equal(t, AgentReasonFinished, final.Reason)
	assert.Nil(t, final.Error)
}

func TestALostRunnerEndsFailedWithACode(t *testing.T) {
	env := newAgentEnv(t)
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).
		Return(AgentFinal{}, temporal.NewNonRetryableApplicationError("cwd \"/srv/x\" resolves outside the allowed roots", ErrTypeAgentInvalidCwd, nil))
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)
	var failed *temporal.ApplicationError
	require.ErrorAs(t, env.GetWorkflowError(), &failed, "a failed agent closes the invocation Failed")
	assert.Equal(t, ErrTypeAgentFailed, failed.Type())
	final := closedPayload(t, env)
	assert.Equal(t, AgentFailed, final.Status)
	require.NotNil(t, final.Error)
	assert.Equal(t, ErrCodeStart, final.Error.Code)
	assert.Contains(t, final.Error.Message, "outside the allowed roots")
}

func TestAnOperatorsCancelWithAWaitInFlightKeepsThePayload(t *testing.T) {
	env := newAgentEnv(t)
	u := recordUpserts(env)
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(time.Hour).
		Return(AgentFinal{}, temporal.NewCanceledError(AgentFinal{Output: "partial work", SessionID: "s2"}))
	var got InvocationPayload
	var done bool
	waitAt(env, 10*time.Second, 10*time.Minute, &got, &done)
	env.RegisterDelayedCallback(env.CancelWorkflow, 30*time.Second)
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)

	var canceled *temporal.CanceledError
	require.ErrorAs(t, env.GetWorkflowError(), &canceled)
	require.True(t, canceled.HasDetails())
	var p InvocationPayload
	require.NoError(t, canceled.Details(&p))
	assert.Equal(t, AgentCancelled, p.Status)
	assert.Equal(t, AgentReasonFinished, p.Reason)
	assert.NotNil(t, p.Output, "the output so far (none here: the test environment drops a cancelled activity's details)")
	require.True(t, done, "the wait in flight answered")
	assert.Equal(t, AgentCancelled, got.Status)
	assert.Equal(t, []string{"running", "cancelled"}, u.states)
}

func TestAnInvocationCancelledBeforeItsRunIsNotLeftRunning(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(AgentInvocation, workflow.RegisterOptions{Name: AgentWorkflowName})
	registerAgentActivities(env)
	u := recordUpserts(env)
	env.OnActivity(ClaimAgentHostActivity, mock.Anything).After(time.Minute).Return(hostClaim, nil)
	env.RegisterDelayedCallback(env.CancelWorkflow, 30*time.Second)
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)

	require.True(t, env.IsWorkflowCompleted())
	var canceled *temporal.CanceledError
	require.ErrorAs(t, env.GetWorkflowError(), &canceled)
	var p InvocationPayload
	require.NoError(t, canceled.Details(&p))
	assert.Equal(t, AgentCancelled, p.Status)
	assert.Equal(t, []string{"running", "cancelled"}, u.states)
	assert.Equal(t, []string{"running", "cancelled"}, u.agentStatuses)
}

// The invocation's worker refuses a wait of another principal's
// invocation (the front end's rule, checked again): a request that did not
// come through a front end gets no more. The owner's wait is taken.
func TestAWaitOfAnotherPrincipalsInvocationIsRefused(t *testing.T) {
	env := newAgentEnv(t)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: InvocationID("alice", [16]byte{1})})
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(time.Hour).
		Return(AgentFinal{Status: AgentSucceeded}, nil)
	var rejected []error
	accepted := 0
	for i, principal := range []string{"bob", "", "alice"} {
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow(AgentWaitUpdate, fmt.Sprintf("w%d", i), &testsuite.TestUpdateCallback{
				OnAccept:   func() { accepted++ },
				OnReject:   func(err error) { rejected = append(rejected, err) },
				OnComplete: func(any, error) {},
			}, AgentWaitRequest{Window: time.Minute, Principal: principal})
		}, time.Second)
	}
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)
	require.Len(t, rejected, 2, "bob's and the local user's")
	for _, err := range rejected {
		var app *temporal.ApplicationError
		require.ErrorAs(t, err, &app)
		assert.Equal(t, ErrTypeNotTheCallers, app.Type())
		assert.Contains(t, app.Error(), "is not the caller's")
	}
	assert.Equal(t, 1, accepted, "alice's")
}

// The invocation ignores a cancel signal of another principal (the front
// end's rule, checked again): the local user's, bob's, and one whose
// argument is not a cancel request leave alice's run going to its end.
func TestACancelOfAnotherPrincipalsInvocationIsIgnored(t *testing.T) {
	env := newAgentEnv(t)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: InvocationID("alice", [16]byte{2})})
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(time.Hour).
		Return(AgentFinal{Status: AgentSucceeded, Output: "all done"}, nil)
	stops := 0
	env.OnActivity(StopLoopActivityName, mock.Anything, mock.Anything).
		Return(func(context.Context, LoopRef) error { stops++; return nil })
	for i, arg := range []any{AgentCancelRequest{Principal: "bob"}, nil, AgentCancelRequest{}, "yes, cancel"} {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(AgentCancelSignal, arg) }, time.Duration(10*(i+1))*time.Second)
	}
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)

	require.True(t, env.IsWorkflowCompleted())
	var final InvocationPayload
	require.NoError(t, env.GetWorkflowResult(&final))
	assert.Equal(t, AgentSucceeded, final.Status, "no cancel of another principal's took")
	assert.Zero(t, stops, "no host was asked to stop the CLI")
}

// The owner's cancel signal, carrying the principal, stops the run.
func TestTheOwnersCancelStopsTheRun(t *testing.T) {
	env := newAgentEnv(t)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: InvocationID("alice", [16]byte{3})})
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(time.Hour).
		Return(AgentFinal{}, temporal.NewCanceledError(AgentFinal{Output: "partial work"}))
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(AgentCancelSignal, AgentCancelRequest{Principal: "bob"}) }, 10*time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(AgentCancelSignal, AgentCancelRequest{Principal: "alice"}) }, 30*time.Second)
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)

	final := closedPayload(t, env)
	assert.Equal(t, AgentCancelled, final.Status)
	assert.Less(t, final.ElapsedMs, int64(time.Hour/time.Millisecond), "stopped at alice's cancel, not at the run's end")
}

// A wait that names a release key ends at the release-wait signal of that
// key with wait_elapsed, taking no blocker; a release of another key ends
// nothing, and a blocker that comes after the release wakes the next wait.
func TestAReleasedWaitAnswersAtOnceAndLeavesTheBlockerForTheNextWait(t *testing.T) {
	env := newAgentEnv(t)
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(time.Hour).
		Return(AgentFinal{Status: AgentSucceeded}, nil)
	var released, other, next InvocationPayload
	var d1, d2, d3 bool
	waitWith(env, time.Second, AgentWaitRequest{Window: 5 * time.Minute, Release: "fan-a"}, &released, &d1)
	waitWith(env, 2*time.Second, AgentWaitRequest{Window: 100 * time.Second, Release: "fan-b"}, &other, &d2)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(AgentReleaseWaitSignal, AgentReleaseWait{Key: "fan-a"}) }, 20*time.Second)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(AgentBlockerSignal, AgentError{Code: BlockerQuestion, Message: "which branch?"})
	}, 200*time.Second)
	waitWith(env, 150*time.Second, AgentWaitRequest{Window: 5 * time.Minute}, &next, &d3)
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)

	require.True(t, d1 && d2 && d3)
	assert.Equal(t, AgentReasonWaitElapsed, released.Reason)
	assert.Equal(t, AgentRunning, released.Status)
	assert.InDelta(t, 20_000, released.ElapsedMs, 1000, "released at the signal, not at its window's end")
	assert.Equal(t, AgentReasonWaitElapsed, other.Reason)
	assert.InDelta(t, 102_000, other.ElapsedMs, 1000, "another key's release ends nothing")
	assert.Equal(t, AgentReasonExecutionBlocked, next.Reason)
	assert.InDelta(t, 200_000, next.ElapsedMs, 1000)
}

// A releasable wait returns a blocker without taking it: the next one gets
// it again, until the caller acks its key; then it is delivered.
func TestAReleasableWaitReturnsABlockerUntilItIsAcked(t *testing.T) {
	env := newAgentEnv(t)
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(time.Hour).
		Return(AgentFinal{Status: AgentSucceeded}, nil)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(AgentBlockerSignal, AgentError{Code: BlockerQuestion, Message: "which branch?"})
	}, 5*time.Second)
	var keys []string
	var first, again, after InvocationPayload
	var d1, d2, d3 bool
	record := func(offset time.Duration, got *InvocationPayload, done *bool) {
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow(AgentWaitUpdate, "", &testsuite.TestUpdateCallback{
				OnAccept: func() {},
				OnReject: func(err error) { panic(err) },
				OnComplete: func(v any, err error) {
					if err != nil {
						panic(err)
					}
					a := v.(AgentWaitAnswer)
					*got, *done = a.InvocationPayload, true
					keys = append(keys, a.PendingBlocker)
				},
			}, AgentWaitRequest{Window: time.Minute, Release: "fan"})
		}, offset)
	}
	record(10*time.Second, &first, &d1)
	record(20*time.Second, &again, &d2)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(AgentAckBlockerSignal, AgentAckBlocker{Key: keys[0]}) }, 30*time.Second)
	record(40*time.Second, &after, &d3)
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)

	require.True(t, d1 && d2 && d3)
	assert.Equal(t, AgentReasonExecutionBlocked, first.Reason)
	assert.Equal(t, AgentReasonExecutionBlocked, again.Reason, "not taken by the first")
	assert.Equal(t, BlockerKey(0, BlockerQuestion), keys[0])
	assert.Equal(t, keys[0], keys[1])
	assert.Equal(t, AgentReasonWaitElapsed, after.Reason, "acked: delivered")
	assert.Empty(t, keys[2])
}
