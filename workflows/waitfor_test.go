package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

func testSpec(maxWaitSec int) WaitForSpec {
	return WaitForSpec{
		Probe:      Probe{Tool: "k8s.kubectl_get", Args: []byte(`{}`)},
		Until:      Until{Kind: ConditionMatches, Pattern: "Running"},
		PollSec:    2,
		MaxWaitSec: maxWaitSec,
	}
}

// pollProbeStub stands in for the activity; the mock decides what it does.
func pollProbeStub(context.Context, PollInput) (WaitForResult, error) {
	panic("mocked")
}

// stopLoopStub stands in for StopLoop; the mock decides what it does.
func stopLoopStub(context.Context, LoopRef) error { panic("mocked") }

// loopAnswerStub stands in for LoopAnswer; by default the host has no
// answer of the loop (a mock may say otherwise).
func loopAnswerStub(context.Context, LoopRef) (any, error) {
	return nil, temporal.NewNonRetryableApplicationError("no answer here", ErrTypeNoLoopAnswer, nil)
}

// pickHostStub stands in for the local activity PickHost: the worker that
// runs the workflow task is on host "picked".
func pickHostStub(context.Context) (string, error) { return "picked", nil }

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(WaitFor, workflow.RegisterOptions{Name: WaitForWorkflowName})
	env.RegisterActivityWithOptions(pollProbeStub, activity.RegisterOptions{Name: PollProbeActivityName})
	env.RegisterActivityWithOptions(stopLoopStub, activity.RegisterOptions{Name: StopLoopActivityName})
	env.RegisterActivityWithOptions(pickHostStub, activity.RegisterOptions{Name: PickHostActivityName})
	env.RegisterActivityWithOptions(loopAnswerStub, activity.RegisterOptions{Name: LoopAnswerActivityName})
	return env
}

func TestWaitForPassesTheScheduleAndReturnsTheLoopsResult(t *testing.T) {
	env := newEnv(t)
	spec := testSpec(300)
	spec.Until = Until{Kind: ConditionQuietForSec, QuietForSec: 30}
	want := WaitForResult{Reason: WaitReasonTimeout, LastObservation: "Pending", ElapsedSec: 300, Samples: 151, EffectiveMaxWaitSec: 300}

	var got PollInput
	env.OnActivity(PollProbeActivityName, mock.Anything, mock.Anything).
		After(300 * time.Second). // skipped: a 300 s wait tests in milliseconds
		Return(func(_ context.Context, in PollInput) (WaitForResult, error) {
			got = in
			return want, nil
		})
	env.ExecuteWorkflow(WaitForWorkflowName, WaitForInput{Spec: spec})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res WaitForResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, want, res)
	assert.Equal(t, spec, got.Spec)
	schedule := got.Schedule()
	assert.Equal(t, got.StartedAt, schedule.Start)
	assert.Equal(t, 300*time.Second, schedule.Deadline.Sub(schedule.Start))
	assert.Equal(t, 2*time.Second, schedule.Poll)
	assert.Equal(t, 151, schedule.ExpectedSamples())
}

// The probe loop runs on the host the front named, as one activity with no
// heartbeat, bounded by the wait's bound plus LoopGrace, never retried by
// Temporal.
func TestWaitForRunsItsLoopOnTheNamedHostsQueue(t *testing.T) {
	env := newEnv(t)
	var info activity.Info
	env.OnActivity(PollProbeActivityName, mock.Anything, mock.Anything).
		Return(func(ctx context.Context, _ PollInput) (WaitForResult, error) {
			info = activity.GetInfo(ctx)
			return WaitForResult{Reason: WaitReasonMatched}, nil
		})
	u := recordUpserts(env)
	env.ExecuteWorkflow(WaitForWorkflowName, WaitForInput{Spec: testSpec(60), Host: "h1"})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, HostQueue("default-test-taskqueue", "h1"), info.TaskQueue)
	assert.Equal(t, time.Duration(0), info.HeartbeatTimeout, "no heartbeat: the host's lease stands for the loop")
	assert.Equal(t, int32(1), info.Attempt)
	assert.Equal(t, []string{"h1"}, u.hosts, "started without it, the wait says its host")
}

// A wait whose front named no host (a front without a worker) runs its
// loop on the host of the worker that runs its first workflow task.
func TestWaitForWithNoHostNamedRunsOnTheWorkersHost(t *testing.T) {
	env := newEnv(t)
	var queue string
	env.OnActivity(PollProbeActivityName, mock.Anything, mock.Anything).
		Return(func(ctx context.Context, _ PollInput) (WaitForResult, error) {
			queue = activity.GetInfo(ctx).TaskQueue
			return WaitForResult{Reason: WaitReasonMatched}, nil
		})
	env.ExecuteWorkflow(WaitForWorkflowName, WaitForInput{Spec: testSpec(60)})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, HostQueue("default-test-taskqueue", "picked"), queue)
}

// When no host answers the loop by its bound plus LoopGrace (every worker
// that could run it was down), Temporal's timer ends the wait with an
// error that says so, not a timeout that claims a last sample.
func TestWaitForWhoseHostNeverAnswersFailsSayingSo(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(PollProbeActivityName, mock.Anything, mock.Anything).
		Return(WaitForResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil))
	env.ExecuteWorkflow(WaitForWorkflowName, WaitForInput{Spec: testSpec(60), Host: "h1"})

	require.True(t, env.IsWorkflowCompleted())
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, env.GetWorkflowError(), &appErr)
	assert.Equal(t, ErrTypeNoHost, appErr.Type())
	assert.Contains(t, appErr.Message(), "no worker answered the probe loop of k8s.kubectl_get within max_wait_sec 60 + 30 s: host h1")
}

// A loop that answered after Temporal had timed out its activity (the
// host and the engine stalled together past the bound and LoopGrace) has
// its answer taken from its host: the run records what the host's feed
// told its caller, not "no worker answered".
func TestWaitForWhoseLoopAnsweredAfterItsTimeoutRecordsTheLoopsAnswer(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(PollProbeActivityName, mock.Anything, mock.Anything).
		Return(WaitForResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil))
	want := WaitForResult{Reason: WaitReasonTimeout, LastObservation: "Pending", ElapsedSec: 137, Samples: 2, EffectiveMaxWaitSec: 14}
	var askedQueue string
	var asked LoopRef
	env.OnActivity(LoopAnswerActivityName, mock.Anything, mock.Anything).
		Return(func(ctx context.Context, ref LoopRef) (any, error) {
			askedQueue, asked = activity.GetInfo(ctx).TaskQueue, ref
			return want, nil
		})
	env.ExecuteWorkflow(WaitForWorkflowName, WaitForInput{Spec: testSpec(14), Host: "h1"})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var got WaitForResult
	require.NoError(t, env.GetWorkflowResult(&got))
	assert.Equal(t, want, got)
	assert.Equal(t, HostQueue("default-test-taskqueue", "h1"), askedQueue, "asked on the loop's host's queue")
	assert.NotEmpty(t, asked.WorkflowID)
	assert.NotEmpty(t, asked.RunID)

	// The loop's own failure, as its host has it, is the run's.
	env = newEnv(t)
	env.OnActivity(PollProbeActivityName, mock.Anything, mock.Anything).
		Return(WaitForResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil))
	env.OnActivity(LoopAnswerActivityName, mock.Anything, mock.Anything).
		Return(nil, temporal.NewNonRetryableApplicationError("the loop failed", ErrTypeLoopFailed,
			temporal.NewNonRetryableApplicationError("probe k8s.kubectl_get hung", ErrTypeProbeHung, nil)))
	env.ExecuteWorkflow(WaitForWorkflowName, WaitForInput{Spec: testSpec(14), Host: "h1"})
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, env.GetWorkflowError(), &appErr)
	assert.Equal(t, ErrTypeProbeHung, appErr.Type())
	assert.Contains(t, appErr.Message(), "probe k8s.kubectl_get hung")

	// A host that could not say (its LoopAnswer timed out, or failed
	// otherwise): the loop's timeout stands, as "no worker answered".
	for _, answerErr := range []error{
		temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil),
		temporal.NewNonRetryableApplicationError("unable to find activityType=LoopAnswer", "ActivityNotRegistered", nil),
	} {
		env = newEnv(t)
		env.OnActivity(PollProbeActivityName, mock.Anything, mock.Anything).
			Return(WaitForResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil))
		env.OnActivity(LoopAnswerActivityName, mock.Anything, mock.Anything).Return(nil, answerErr)
		env.ExecuteWorkflow(WaitForWorkflowName, WaitForInput{Spec: testSpec(14), Host: "h1"})
		require.ErrorAs(t, env.GetWorkflowError(), &appErr, "%v", answerErr)
		assert.Equal(t, ErrTypeNoHost, appErr.Type(), "%v", answerErr)
	}
}

// A cancelled wait asks its loop's host to stop the loop (the cancel of an
// activity with no heartbeat reaches no worker by itself), then ends
// cancelled.
func TestACancelledWaitForStopsItsLoopOnItsHost(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(PollProbeActivityName, mock.Anything, mock.Anything).After(time.Hour).
		Return(WaitForResult{}, nil)
	var stop LoopRef
	var stopQueue string
	env.OnActivity(StopLoopActivityName, mock.Anything, mock.Anything).
		Return(func(ctx context.Context, in LoopRef) error {
			stop, stopQueue = in, activity.GetInfo(ctx).TaskQueue
			return nil
		})
	env.RegisterDelayedCallback(env.CancelWorkflow, 5*time.Second)
	env.ExecuteWorkflow(WaitForWorkflowName, WaitForInput{Spec: testSpec(60), Host: "h1"})

	require.True(t, env.IsWorkflowCompleted())
	var canceled *temporal.CanceledError
	require.ErrorAs(t, env.GetWorkflowError(), &canceled)
	assert.Equal(t, "default-test-workflow-id", stop.WorkflowID)
	assert.NotEmpty(t, stop.RunID)
	assert.Equal(t, HostQueue("default-test-taskqueue", "h1"), stopQueue)
}

func TestWaitForSurfacesProbeErrors(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(PollProbeActivityName, mock.Anything, mock.Anything).
		Return(WaitForResult{}, temporal.NewNonRetryableApplicationError("sample 3: probe k8s.kubectl_get returned 300 KiB", ErrTypeProbeOutputTooLarge, nil))
	env.ExecuteWorkflow(WaitForWorkflowName, WaitForInput{Spec: testSpec(60)})

	require.True(t, env.IsWorkflowCompleted())
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, env.GetWorkflowError(), &appErr)
	assert.Equal(t, ErrTypeProbeOutputTooLarge, appErr.Type())
	assert.Contains(t, appErr.Message(), "sample 3")
}
