package workflows

import (
	"context"
	"errors"
	"sync"
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
	return env
}

// A run whose first attempt is lost and retried does not get a fresh
// max_run_sec: every attempt's context ends when the first was scheduled
// plus max_run_sec, and the invocation ends failed with error.code
// "timeout", carrying what the CLI had said by its last heartbeat.
func TestARetriedRunStillEndsAtMaxRunOverall(t *testing.T) {
	const maxRun = 3 * time.Second
	env := newBoundsEnv()
	env.RegisterActivityWithOptions(func(context.Context) (string, error) { return "host-q", nil },
		activity.RegisterOptions{Name: ClaimAgentHostActivity})

	type attempt struct{ scheduled, deadline time.Time }
	var mu sync.Mutex
	var attempts []attempt
	env.RegisterActivityWithOptions(func(ctx context.Context, in RunAgentInput) (AgentFinal, error) {
		info := activity.GetInfo(ctx)
		mu.Lock()
		attempts = append(attempts, attempt{info.ScheduledTime, info.Deadline})
		mu.Unlock()
		if info.Attempt == 1 {
			return AgentFinal{}, errors.New("worker stopping; the CLI keeps running and is re-attached on restart")
		}
		activity.RecordHeartbeat(ctx, AgentLive{SessionID: "s1", Reply: "half way"})
		<-ctx.Done() // the CLI runs on past the bound
		return AgentFinal{}, ctx.Err()
	}, activity.RegisterOptions{Name: RunAgentActivityName})

	in := agentInput
	in.MaxRun = maxRun
	env.ExecuteWorkflow(AgentWorkflowName, in)

	require.True(t, env.IsWorkflowCompleted())
	var final InvocationPayload
	require.NoError(t, env.GetWorkflowResult(&final))
	assert.Equal(t, AgentFailed, final.Status)
	require.NotNil(t, final.Error)
	assert.Equal(t, ErrCodeTimeout, final.Error.Code)
	assert.Contains(t, final.Error.Message, "agents.max_run_sec (3 s, counted over every attempt)")
	// The output and session from the last heartbeat: see
	// TestATimedOutRunKeepsItsLastHeartbeat (the test environment drops a
	// timed-out activity's heartbeat).

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, attempts, 2, "the first attempt failed and was retried")
	for i, a := range attempts {
		assert.WithinDuration(t, attempts[0].scheduled.Add(maxRun), a.deadline, 10*time.Millisecond,
			"attempt %d ends max_run_sec after the first was scheduled", i+1)
	}
}

// A run that ran out of max_run_sec reports what the CLI had said by its
// last heartbeat, and its session, so the caller can resume it.
func TestATimedOutRunKeepsItsLastHeartbeat(t *testing.T) {
	err := temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil, AgentLive{SessionID: "s1", Reply: "half way"})
	final := finalFrom(AgentFinal{}, err, false, 90*time.Minute)
	assert.Equal(t, &AgentFinal{Status: AgentFailed, Output: "half way", SessionID: "s1", Error: &AgentError{
		Code: ErrCodeTimeout, Message: "the run exceeded agents.max_run_sec (5400 s, counted over every attempt)"}}, final)

	// A heartbeat timeout is a lost worker, retried until max_run_sec.
	lost := finalFrom(AgentFinal{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil), false, time.Hour)
	assert.Equal(t, ErrCodeWorkerLost, lost.Error.Code)
}

// invocationResult runs the agent invocation of agentInput on env to its
// end and returns its payload.
func invocationResult(t *testing.T, env *testsuite.TestWorkflowEnvironment) InvocationPayload {
	t.Helper()
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)
	require.True(t, env.IsWorkflowCompleted())
	var final InvocationPayload
	require.NoError(t, env.GetWorkflowResult(&final))
	return final
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
// and none polls it (or that cannot be told); on the shared queue every
// attempt fails (no worker there has the activity); the claim retries there
// for claimSharedOffer and the invocation then ends failed, its message
// naming the cause.
func TestAnUnclaimedInvocationEndsFailedNamingTheCause(t *testing.T) {
	for _, tc := range []struct {
		name    string
		polling func(context.Context, AgentHostsPollingInput) (int, error)
		bound   time.Duration
	}{
		{"no agent host polls", hostsPollingStub(0), claimSharedOffer},
		{"whether hosts poll cannot be told", func(context.Context, AgentHostsPollingInput) (int, error) {
			return 0, temporal.NewNonRetryableApplicationError("describe task queue: permission denied", "AgentHostsUnknown", nil)
		}, claimSharedOffer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newBoundsEnv()
			var claims, looks int
			env.RegisterActivityWithOptions(func(ctx context.Context) (string, error) {
				if activity.GetInfo(ctx).TaskQueue == AgentClaimQueue("default-test-taskqueue") {
					return "", temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
				}
				claims++
				return "", errors.New("unable to find activityType=ClaimAgentHost")
			}, activity.RegisterOptions{Name: ClaimAgentHostActivity})
			env.RegisterActivityWithOptions(func(ctx context.Context, in AgentHostsPollingInput) (int, error) {
				looks++
				return tc.polling(ctx, in)
			}, activity.RegisterOptions{Name: AgentHostsPollingActivity})
			env.RegisterActivityWithOptions(runAgentStub, activity.RegisterOptions{Name: RunAgentActivityName})
			u := recordUpserts(env)
			start := env.Now()
			env.ExecuteWorkflow(AgentWorkflowName, agentInput)

			require.True(t, env.IsWorkflowCompleted())
			var final InvocationPayload
			require.NoError(t, env.GetWorkflowResult(&final), "it completes: wait_agent reads its payload")
			assert.Equal(t, AgentFailed, final.Status)
			assert.Equal(t, AgentReasonFinished, final.Reason)
			require.NotNil(t, final.Error)
			assert.Equal(t, ErrCodeStart, final.Error.Code)
			assert.Contains(t, final.Error.Message, "no host claimed this invocation: no agent host polled its queue for 2m0s, then none took it within 30s on the shared queue")
			assert.Contains(t, final.Error.Message, "[agents]")
			assert.Contains(t, final.Error.Message, "unable to find activityType=ClaimAgentHost")
			assert.GreaterOrEqual(t, claims, 5, "bounded by time, not by a few attempts")
			assert.LessOrEqual(t, env.Now().Sub(start), tc.bound)
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
// them again, not given up to the shared queue.
func TestAClaimPollingHostsDidNotTakeIsOfferedToThemAgain(t *testing.T) {
	env := newBoundsEnv()
	var queues []string
	var asked []AgentHostsPollingInput
	env.RegisterActivityWithOptions(func(ctx context.Context) (string, error) {
		queues = append(queues, activity.GetInfo(ctx).TaskQueue)
		if len(queues) <= 2 {
			return "", temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
		}
		return "host-q", nil
	}, activity.RegisterOptions{Name: ClaimAgentHostActivity})
	env.RegisterActivityWithOptions(func(_ context.Context, in AgentHostsPollingInput) (int, error) {
		asked = append(asked, in)
		return 1, nil
	}, activity.RegisterOptions{Name: AgentHostsPollingActivity})
	env.RegisterActivityWithOptions(runAgentSucceeds, activity.RegisterOptions{Name: RunAgentActivityName})
	final := invocationResult(t, env)
	assert.Equal(t, AgentSucceeded, final.Status, "error: %+v", final.Error)
	hosts := AgentClaimQueue("default-test-taskqueue")
	assert.Equal(t, []string{hosts, hosts, hosts}, queues, "never offered on the shared queue")
	want := AgentHostsPollingInput{Queue: hosts, Within: AgentClaimTimeout}
	assert.Equal(t, []AgentHostsPollingInput{want, want}, asked)
}

// Hosts that poll and never take the claim end the invocation failed after
// at most AgentClaimCrashTimeout's worth of offers, and the message says
// hosts were polling, not that none exists.
func TestAClaimPollingHostsNeverTakeEndsFailedSayingSo(t *testing.T) {
	env := newBoundsEnv()
	var queues []string
	env.RegisterActivityWithOptions(func(ctx context.Context) (string, error) {
		queues = append(queues, activity.GetInfo(ctx).TaskQueue)
		return "", temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
	}, activity.RegisterOptions{Name: ClaimAgentHostActivity})
	env.RegisterActivityWithOptions(hostsPollingStub(2), activity.RegisterOptions{Name: AgentHostsPollingActivity})
	env.RegisterActivityWithOptions(runAgentStub, activity.RegisterOptions{Name: RunAgentActivityName})
	final := invocationResult(t, env)
	assert.Equal(t, AgentFailed, final.Status)
	require.NotNil(t, final.Error)
	assert.Equal(t, ErrCodeStart, final.Error.Code)
	assert.Contains(t, final.Error.Message, "no host claimed this invocation within 15m0s: 2 agent host(s) polled its queue within 2m0s but none took the claim")
	assert.Len(t, queues, 1+claimPollingRounds, "the rounds are capped even when no time passes between them")
	assert.NotContains(t, queues, "default-test-taskqueue", "never offered on the shared queue")
}

// On the workflow's clock, each offer to polling hosts that none takes
// ends after AgentClaimTimeout (its schedule-to-start timeout), and the
// offers stop while AgentClaimCrashTimeout still holds a whole one.
func TestOffersToPollingHostsEndWithinTheCrashBound(t *testing.T) {
	env := newBoundsEnv()
	env.RegisterActivityWithOptions(func(context.Context) (string, error) { return "", nil },
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
		Return(func(context.Context) (string, error) {
			offers++
			return "", temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
		})
	start := env.Now()
	final := invocationResult(t, env)
	assert.Equal(t, AgentFailed, final.Status)
	require.NotNil(t, final.Error)
	assert.Contains(t, final.Error.Message, "1 agent host(s) polled its queue within 2m0s but none took the claim")
	took := env.Now().Sub(start)
	assert.LessOrEqual(t, took, AgentClaimCrashTimeout)
	assert.Greater(t, took, AgentClaimCrashTimeout-AgentClaimTimeout-claimSharedOffer)
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
	env.RegisterActivityWithOptions(func(ctx context.Context) (string, error) {
		claims++
		if env.Now().Sub(start) < AgentClaimTimeout+time.Minute {
			// The host that took this attempt died before answering.
			return "", temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)
		}
		claimedAt = env.Now()
		return "host-q", nil
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
	env.RegisterActivityWithOptions(func(ctx context.Context) (string, error) {
		return "", temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)
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

// A rolling upgrade may bring the agent hosts last: a claim that no agent
// host of this release takes from AgentClaimQueue within claimQueueWait is
// offered on the shared queue, where an agent host of the previous release
// takes it, and the invocation runs on that host.
func TestAClaimNoNewAgentHostTakesGoesToTheSharedQueue(t *testing.T) {
	env := newBoundsEnv()
	var queues []string
	env.RegisterActivityWithOptions(func(ctx context.Context) (string, error) {
		queue := activity.GetInfo(ctx).TaskQueue
		queues = append(queues, queue)
		if len(queues) == 1 {
			// No agent host of this release polls the claim queue.
			return "", temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
		}
		return "old-host-queue", nil
	}, activity.RegisterOptions{Name: ClaimAgentHostActivity})
	env.RegisterActivityWithOptions(hostsPollingStub(0), activity.RegisterOptions{Name: AgentHostsPollingActivity})
	var ranOn string
	env.RegisterActivityWithOptions(func(ctx context.Context, in RunAgentInput) (AgentFinal, error) {
		ranOn = activity.GetInfo(ctx).TaskQueue
		return AgentFinal{Status: AgentSucceeded, Output: "done"}, nil
	}, activity.RegisterOptions{Name: RunAgentActivityName})
	final := invocationResult(t, env)
	assert.Equal(t, AgentSucceeded, final.Status)
	require.Len(t, queues, 2)
	assert.Equal(t, AgentClaimQueue("default-test-taskqueue"), queues[0], "offered to this release's agent hosts first")
	assert.Equal(t, "default-test-taskqueue", queues[1], "then on the shared queue")
	assert.Equal(t, "old-host-queue", ranOn)
}

// In a crash loop, a gap with no agent host polling can follow minutes of
// lost attempts. It ends the hosts' queue phase only after AgentClaimTimeout
// without a poller (the test environment reports that schedule-to-start
// timeout at once), and the shared queue then still gets claimSharedOffer,
// where the agent hosts, back up, take it. Before claimStormVersion the
// shared queue got what was left of AgentClaimTimeout from the start:
// nothing, and the invocation failed saying no agent host existed.
func TestAClaimThatOutlivesAPollerGapInACrashLoopIsStillClaimed(t *testing.T) {
	env := newBoundsEnv()
	start := env.Now()
	var queues []string
	env.RegisterActivityWithOptions(func(ctx context.Context) (string, error) {
		queues = append(queues, activity.GetInfo(ctx).TaskQueue)
		switch {
		case env.Now().Sub(start) < AgentClaimTimeout+time.Minute:
			// The host that took this attempt died before answering.
			return "", temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)
		case activity.GetInfo(ctx).TaskQueue == AgentClaimQueue("default-test-taskqueue"):
			// Then no host polled the queue for a while.
			return "", temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
		}
		return "host-q", nil
	}, activity.RegisterOptions{Name: ClaimAgentHostActivity})
	env.RegisterActivityWithOptions(hostsPollingStub(0), activity.RegisterOptions{Name: AgentHostsPollingActivity})
	env.RegisterActivityWithOptions(runAgentSucceeds, activity.RegisterOptions{Name: RunAgentActivityName})
	final := invocationResult(t, env)
	assert.Equal(t, AgentSucceeded, final.Status, "error: %+v", final.Error)
	require.NotEmpty(t, queues)
	assert.Equal(t, "default-test-taskqueue", queues[len(queues)-1], "claimed on the shared queue")
}
