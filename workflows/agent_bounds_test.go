package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// newBoundsEnv is a test environment for tests whose activities run in real
// time: it waits up to a minute of wall time for progress (not 3 s), and
// its deadlock detector allows a workflow task 10 s (not 1 s), which a
// loaded machine can exceed.
func newBoundsEnv() *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute)
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 10 * time.Second})
	env.RegisterWorkflowWithOptions(AgentInvocation, workflow.RegisterOptions{Name: AgentWorkflowName})
	env.RegisterActivityWithOptions(func(context.Context, LoopRef) error { return nil },
		activity.RegisterOptions{Name: StopLoopActivityName})
	env.RegisterActivityWithOptions(loopAnswerStub, activity.RegisterOptions{Name: LoopAnswerActivityName})
	return env
}

// runOutAtTemporalsBound is an environment whose claimed run's activity
// Temporal ends by its bound (maxRun plus LoopGrace): no host answered it.
func runOutAtTemporalsBound(maxRun time.Duration) *testsuite.TestWorkflowEnvironment {
	env := newBoundsEnv()
	env.RegisterActivityWithOptions(func(context.Context) (AgentHostClaim, error) { return hostClaim, nil },
		activity.RegisterOptions{Name: ClaimAgentHostActivity})
	env.RegisterActivityWithOptions(runAgentStub, activity.RegisterOptions{Name: RunAgentActivityName})
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(maxRun+LoopGrace).
		Return(AgentFinal{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil))
	return env
}

// runAgentInvocation runs an invocation of maxRun in env to its end and
// returns its payload.
func runAgentInvocation(t *testing.T, env *testsuite.TestWorkflowEnvironment, maxRun time.Duration) InvocationPayload {
	t.Helper()
	in := agentInput
	in.MaxRun = maxRun
	env.ExecuteWorkflow(AgentWorkflowName, in)
	return closedPayload(t, env)
}

// closedPayload is the final payload of the invocation env ran to its
// end, whichever way it closed (closeError): Completed with it as its
// result, Canceled (cancel_agent) or Failed (a failed agent) carrying it.
func closedPayload(t *testing.T, env *testsuite.TestWorkflowEnvironment) InvocationPayload {
	t.Helper()
	require.True(t, env.IsWorkflowCompleted())
	if err := env.GetWorkflowError(); err != nil {
		final, ok := InvocationFromError(err)
		require.True(t, ok, "the invocation closed with no payload: %v", err)
		return final
	}
	var final InvocationPayload
	require.NoError(t, env.GetWorkflowResult(&final))
	return final
}

// The host stops the CLI at max_run_sec and answers with what it had
// said; when no host is up to (it was down at the deadline), Temporal's
// bound (max_run_sec plus LoopGrace) ends the invocation failed with
// error.code "timeout", saying why no output is known.
func TestARunWhoseHostIsDownAtMaxRunEndsAtTemporalsBound(t *testing.T) {
	const maxRun = 3 * time.Second
	env := runOutAtTemporalsBound(maxRun)
	start := env.Now()
	final := runAgentInvocation(t, env, maxRun)
	assert.Equal(t, AgentFailed, final.Status)
	require.NotNil(t, final.Error)
	assert.Equal(t, ErrCodeTimeout, final.Error.Code)
	assert.Contains(t, final.Error.Message, "agents.max_run_sec (3 s) while no worker on its host was up")
	assert.GreaterOrEqual(t, env.Now().Sub(start), maxRun+LoopGrace)
}

// A run that ended on its host after Temporal's bound had ended its
// activity (the host and the engine stalled together) ends with the end
// its host had, not with "no worker on its host was up".
func TestARunThatEndedAfterTemporalsBoundEndsAsItsHostSaw(t *testing.T) {
	env := runOutAtTemporalsBound(3 * time.Second)
	env.OnActivity(LoopAnswerActivityName, mock.Anything, mock.Anything).
		Return(AgentFinal{Status: AgentSucceeded, Output: "done"}, nil)
	final := runAgentInvocation(t, env, 3*time.Second)
	assert.Equal(t, AgentSucceeded, final.Status)
	require.NotNil(t, final.Output)
	assert.Equal(t, "done", *final.Output)
}

// finalFrom maps every way a run ends to the invocation's end.
func TestFinalFromMapsEachEnd(t *testing.T) {
	done := AgentFinal{Status: AgentSucceeded, Output: "ok"}
	assert.Equal(t, &done, finalFrom(done, nil, false, time.Hour))

	cancelled := finalFrom(AgentFinal{}, temporal.NewCanceledError(AgentFinal{Output: "half", SessionID: "s1"}), true, time.Hour)
	assert.Equal(t, &AgentFinal{Status: AgentCancelled, Output: "half", SessionID: "s1"}, cancelled)

	timedOut := finalFrom(AgentFinal{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil), false, 90*time.Minute)
	assert.Equal(t, ErrCodeTimeout, timedOut.Error.Code)
	assert.Contains(t, timedOut.Error.Message, "(5400 s)")

	notStarted := finalFrom(AgentFinal{}, temporal.NewNonRetryableApplicationError("cwd outside", ErrTypeAgentInvalidCwd, nil), false, time.Hour)
	assert.Equal(t, &AgentFinal{Status: AgentFailed, Error: &AgentError{Code: ErrCodeStart, Message: "cwd outside"}}, notStarted)

	other := finalFrom(AgentFinal{}, errors.New("boom"), false, time.Hour)
	assert.Equal(t, ErrCodeWorkerLost, other.Error.Code)
}

// invocationResult runs the agent invocation of agentInput on env to its
// end and returns its payload.
func invocationResult(t *testing.T, env *testsuite.TestWorkflowEnvironment) InvocationPayload {
	t.Helper()
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)
	return closedPayload(t, env)
}

// runAgentSucceeds stands in for a CLI run that succeeds at once.
func runAgentSucceeds(context.Context, RunAgentInput) (AgentFinal, error) {
	return AgentFinal{Status: AgentSucceeded, Output: "done"}, nil
}

// hostsPollingStub stands in for AgentHostsPollingActivity: n hosts poll.
func hostsPollingStub(n int) func(context.Context, AgentHostsPollingInput) (int, error) {
	return func(context.Context, AgentHostsPollingInput) (int, error) { return n, nil }
}

// With no worker that has agents configured, no host takes the claim from
// the agent hosts' queue within AgentClaimTimeout (the server's
// schedule-to-start timeout, which the test environment reports at once),
// and none polls it (or that cannot be told): the invocation ends failed,
// its message naming the cause.
func TestAnUnclaimedInvocationEndsFailedNamingTheCause(t *testing.T) {
	for _, tc := range []struct {
		name    string
		polling func(context.Context, AgentHostsPollingInput) (int, error)
	}{
		{"no agent host polls", hostsPollingStub(0)},
		{"whether hosts poll cannot be told", func(context.Context, AgentHostsPollingInput) (int, error) {
			return 0, temporal.NewNonRetryableApplicationError("describe task queue: permission denied", "AgentHostsUnknown", nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newBoundsEnv()
			var queues []string
			var looks int
			env.RegisterActivityWithOptions(func(ctx context.Context) (AgentHostClaim, error) {
				queues = append(queues, activity.GetInfo(ctx).TaskQueue)
				return AgentHostClaim{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
			}, activity.RegisterOptions{Name: ClaimAgentHostActivity})
			env.RegisterActivityWithOptions(func(ctx context.Context, in AgentHostsPollingInput) (int, error) {
				looks++
				return tc.polling(ctx, in)
			}, activity.RegisterOptions{Name: AgentHostsPollingActivity})
			env.RegisterActivityWithOptions(runAgentStub, activity.RegisterOptions{Name: RunAgentActivityName})
			u := recordUpserts(env)
			env.ExecuteWorkflow(AgentWorkflowName, agentInput)

			final := closedPayload(t, env)
			assert.Equal(t, AgentFailed, final.Status)
			assert.Equal(t, AgentReasonFinished, final.Reason)
			require.NotNil(t, final.Error)
			assert.Equal(t, ErrCodeStart, final.Error.Code)
			assert.Contains(t, final.Error.Message, "no host claimed this invocation within 2m0s: no durawait worker with [agents] configured took it")
			assert.Contains(t, final.Error.Message, "no worker took the claim")
			assert.Equal(t, []string{AgentClaimQueue("default-test-taskqueue")}, queues, "offered to the agent hosts only")
			assert.Equal(t, 1, looks, "asked once whether agent hosts poll")
			assert.Equal(t, []string{"running", "failed"}, u.states)
			assert.Equal(t, []string{"running", "failed"}, u.agentStatuses)
		})
	}
}

// In a storm of engine restarts, each restart reloads the agent hosts'
// queue, and a claim attempt can wait there AgentClaimTimeout although
// agent hosts poll it (the crash soak's one wrong answer in 400 kills).
// While Temporal saw hosts poll within that time, the claim is offered to
// them again.
func TestAClaimPollingHostsDidNotTakeIsOfferedToThemAgain(t *testing.T) {
	env := newBoundsEnv()
	var queues []string
	var asked []AgentHostsPollingInput
	env.RegisterActivityWithOptions(func(ctx context.Context) (AgentHostClaim, error) {
		queues = append(queues, activity.GetInfo(ctx).TaskQueue)
		if len(queues) <= 2 {
			return AgentHostClaim{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
		}
		return hostClaim, nil
	}, activity.RegisterOptions{Name: ClaimAgentHostActivity})
	env.RegisterActivityWithOptions(func(_ context.Context, in AgentHostsPollingInput) (int, error) {
		asked = append(asked, in)
		return 1, nil
	}, activity.RegisterOptions{Name: AgentHostsPollingActivity})
	env.RegisterActivityWithOptions(runAgentSucceeds, activity.RegisterOptions{Name: RunAgentActivityName})
	final := invocationResult(t, env)
	assert.Equal(t, AgentSucceeded, final.Status, "error: %+v", final.Error)
	hosts := AgentClaimQueue("default-test-taskqueue")
	assert.Equal(t, []string{hosts, hosts, hosts}, queues, "offered to the agent hosts only")
	want := AgentHostsPollingInput{Queue: hosts, Within: AgentClaimTimeout}
	assert.Equal(t, []AgentHostsPollingInput{want, want}, asked)
}

// Hosts that poll and never take the claim end the invocation failed after
// at most AgentClaimCrashTimeout's worth of offers, and the message says
// hosts were polling, not that none exists.
func TestAClaimPollingHostsNeverTakeEndsFailedSayingSo(t *testing.T) {
	env := newBoundsEnv()
	var queues []string
	env.RegisterActivityWithOptions(func(ctx context.Context) (AgentHostClaim, error) {
		queues = append(queues, activity.GetInfo(ctx).TaskQueue)
		return AgentHostClaim{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
	}, activity.RegisterOptions{Name: ClaimAgentHostActivity})
	env.RegisterActivityWithOptions(hostsPollingStub(2), activity.RegisterOptions{Name: AgentHostsPollingActivity})
	env.RegisterActivityWithOptions(runAgentStub, activity.RegisterOptions{Name: RunAgentActivityName})
	final := invocationResult(t, env)
	assert.Equal(t, AgentFailed, final.Status)
	require.NotNil(t, final.Error)
	assert.Equal(t, ErrCodeStart, final.Error.Code)
	assert.Contains(t, final.Error.Message, "no host claimed this invocation within 15m0s: 2 agent host(s) polled its queue within 2m0s but none took the claim")
	assert.Len(t, queues, 1+claimPollingRounds, "the rounds are capped even when no time passes between them")
	assert.NotContains(t, queues, "default-test-taskqueue", "offered to the agent hosts only")
}

// On the workflow's clock, each offer to polling hosts that none takes
// ends after AgentClaimTimeout (its schedule-to-start timeout), and the
// offers stop while AgentClaimCrashTimeout still holds a whole one.
func TestOffersToPollingHostsEndWithinTheCrashBound(t *testing.T) {
	env := newBoundsEnv()
	env.RegisterActivityWithOptions(func(context.Context) (AgentHostClaim, error) { return AgentHostClaim{}, nil },
		activity.RegisterOptions{Name: ClaimAgentHostActivity})
	looks := 0
	env.RegisterActivityWithOptions(func(context.Context, AgentHostsPollingInput) (int, error) {
		looks++
		if looks == 3 {
			// A look that cannot tell keeps what the one before saw.
			return 0, temporal.NewNonRetryableApplicationError("describe task queue: unavailable", "AgentHostsUnknown", nil)
		}
		return 1, nil
	}, activity.RegisterOptions{Name: AgentHostsPollingActivity})
	env.RegisterActivityWithOptions(runAgentStub, activity.RegisterOptions{Name: RunAgentActivityName})
	offers := 0
	env.OnActivity(ClaimAgentHostActivity, mock.Anything).After(AgentClaimTimeout).
		Return(func(context.Context) (AgentHostClaim, error) {
			offers++
			return AgentHostClaim{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
		})
	start := env.Now()
	final := invocationResult(t, env)
	assert.Equal(t, AgentFailed, final.Status)
	require.NotNil(t, final.Error)
	assert.Contains(t, final.Error.Message, "1 agent host(s) polled its queue within 2m0s but none took the claim")
	took := env.Now().Sub(start)
	assert.LessOrEqual(t, took, AgentClaimCrashTimeout)
	assert.Greater(t, took, AgentClaimCrashTimeout-AgentClaimTimeout-claimMargin)
	assert.Equal(t, 7, offers, "the first and six more, each AgentClaimTimeout long")
}

// Agent hosts that take the claim and die before they answer (a crash
// loop; the crash soak killed durawait every 4 s) delay the invocation, not
// fail it at AgentClaimTimeout: the claim on the agent hosts' queue is
// retried until a host answers, within AgentClaimCrashTimeout.
func TestAClaimLostWithItsHostsIsRetriedPastTheNoHostBound(t *testing.T) {
	env := newBoundsEnv()
	var claims int
	start := env.Now()
	var claimedAt time.Time
	env.RegisterActivityWithOptions(func(ctx context.Context) (AgentHostClaim, error) {
		claims++
		if env.Now().Sub(start) < AgentClaimTimeout+time.Minute {
			// The host that took this attempt died before answering.
			return AgentHostClaim{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)
		}
		claimedAt = env.Now()
		return hostClaim, nil
	}, activity.RegisterOptions{Name: ClaimAgentHostActivity})
	env.RegisterActivityWithOptions(runAgentSucceeds, activity.RegisterOptions{Name: RunAgentActivityName})
	final := invocationResult(t, env)
	assert.Equal(t, AgentSucceeded, final.Status, "error: %+v", final.Error)
	assert.Greater(t, claimedAt.Sub(start), AgentClaimTimeout, "claimed after the no-host bound had passed")
	assert.Greater(t, claims, 20)
}

// A crash loop that outlasts AgentClaimCrashTimeout ends the invocation
// failed, and the message says the hosts kept dying, not that none exists.
func TestAClaimLostWithItsHostsForeverEndsFailedSayingSo(t *testing.T) {
	env := newBoundsEnv()
	env.RegisterActivityWithOptions(func(ctx context.Context) (AgentHostClaim, error) {
		return AgentHostClaim{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)
	}, activity.RegisterOptions{Name: ClaimAgentHostActivity})
	env.RegisterActivityWithOptions(runAgentStub, activity.RegisterOptions{Name: RunAgentActivityName})
	start := env.Now()
	final := invocationResult(t, env)
	assert.Equal(t, AgentFailed, final.Status)
	require.NotNil(t, final.Error)
	assert.Equal(t, ErrCodeStart, final.Error.Code)
	assert.Contains(t, final.Error.Message, "no host claimed this invocation within 15m0s: agent hosts took the claim and were lost")
	assert.GreaterOrEqual(t, env.Now().Sub(start), AgentClaimCrashTimeout-time.Minute)
}
