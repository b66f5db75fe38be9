package workflows

import (
	"context"
	"strings"
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

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(WaitFor, workflow.RegisterOptions{Name: WaitForWorkflowName})
	env.RegisterActivityWithOptions(pollProbeStub, activity.RegisterOptions{Name: PollProbeActivityName})
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

func TestWaitForEndsFromTheLastHeartbeatWhenTheLoopIsLost(t *testing.T) {
	env := newEnv(t)
	last := PollProgress{Samples: 7, HasObservation: true, LastObservation: "Pending", Attempts: 8}
	env.OnActivity(PollProbeActivityName, mock.Anything, mock.Anything).
		Return(WaitForResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil, last))
	env.ExecuteWorkflow(WaitForWorkflowName, WaitForInput{Spec: testSpec(60)})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res WaitForResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, WaitReasonTimeout, res.Reason)
	assert.Equal(t, 7, res.Samples)
	assert.Equal(t, "Pending", res.LastObservation)
	assert.Equal(t, 60, res.EffectiveMaxWaitSec)
}

// A loop whose worker died right after a sample that met the condition,
// and that no worker resumed before the bound ran out, answers with that
// sample's verdict, not timeout (the crash soak found such waits answering
// timeout with a matching last observation).
func TestWaitForJudgesTheLastHeartbeatsSampleWhenTheLoopIsLost(t *testing.T) {
	at := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	quiet := testSpec(60)
	quiet.Until = Until{Kind: ConditionQuietForSec, QuietForSec: 10}
	failing := testSpec(60)
	failing.Until.FailPattern = "CrashLoop"
	long := strings.Repeat("x", MaxCheckpointExcerptBytes) + " Running"
	cases := []struct {
		name   string
		spec   WaitForSpec
		last   PollProgress
		reason WaitReason
	}{
		{"matching sample", testSpec(60), PollProgress{Samples: 3, HasObservation: true, LastObservation: "pod Running"}, WaitReasonMatched},
		{"failing sample", failing, PollProgress{Samples: 3, HasObservation: true, LastObservation: "CrashLoop Running"}, WaitReasonFailed},
		{"sample that does not match", testSpec(60), PollProgress{Samples: 3, HasObservation: true, LastObservation: "Pending"}, WaitReasonTimeout},
		{"observation cut in the heartbeat", testSpec(60), PollProgress{Samples: 3, HasObservation: true, LastObservation: long}, WaitReasonTimeout},
		{"quiet long enough at the last attempt", quiet, PollProgress{Samples: 9, HasObservation: true, LastObservation: "same",
			QuietSince: at, LastAttemptAt: at.Add(10 * time.Second)}, WaitReasonSettled},
		{"quiet not yet long enough", quiet, PollProgress{Samples: 9, HasObservation: true, LastObservation: "same",
			QuietSince: at, LastAttemptAt: at.Add(9 * time.Second)}, WaitReasonTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			env.OnActivity(PollProbeActivityName, mock.Anything, mock.Anything).
				Return(WaitForResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil, tc.last.Checkpoint()))
			env.ExecuteWorkflow(WaitForWorkflowName, WaitForInput{Spec: tc.spec})

			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var res WaitForResult
			require.NoError(t, env.GetWorkflowResult(&res))
			assert.Equal(t, tc.reason, res.Reason)
			assert.Equal(t, tc.last.Samples, res.Samples)
		})
	}
}

func TestWaitForFailsWhenNoSampleWasEverTaken(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(PollProbeActivityName, mock.Anything, mock.Anything).
		Return(WaitForResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil))
	env.ExecuteWorkflow(WaitForWorkflowName, WaitForInput{Spec: testSpec(60)})

	require.True(t, env.IsWorkflowCompleted())
	err := env.GetWorkflowError()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no sample of k8s.kubectl_get was taken within max_wait_sec 60")
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
