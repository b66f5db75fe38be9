package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/durawait/durawait/workflows"
)

// scriptedProber answers each call with the next step of its script; the
// last step repeats. A step may hang until the call is cancelled.
type scriptedProber struct {
	mu    sync.Mutex
	steps []step
	calls int
}

type step struct {
	out   ProbeOutput
	err   error
	hang  bool
	delay time.Duration
}

func text(s string) step { return step{out: ProbeOutput{Text: s}} }

func (p *scriptedProber) CallProbe(ctx context.Context, tool string, args json.RawMessage) (ProbeOutput, error) {
	p.mu.Lock()
	s := p.steps[min(p.calls, len(p.steps)-1)]
	p.calls++
	p.mu.Unlock()
	if s.hang {
		<-ctx.Done()
		return ProbeOutput{}, ctx.Err()
	}
	if s.delay > 0 {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return ProbeOutput{}, ctx.Err()
		}
	}
	return s.out, s.err
}

func (p *scriptedProber) callCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// recordingObserver keeps every sample it is told of.
type recordingObserver struct {
	mu      sync.Mutex
	samples []workflows.Sample
	results []workflows.WaitForResult
}

func (o *recordingObserver) Observe(_ string, event any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch e := event.(type) {
	case workflows.Sample:
		o.samples = append(o.samples, e)
	case workflows.WaitForResult:
		o.results = append(o.results, e)
	}
}

// The activity works in real time; these inputs use milliseconds where the
// tool's contract uses seconds, so each test takes a fraction of a second.
func input(until workflows.Until, poll, maxWait, quiet time.Duration) workflows.PollInput {
	now := time.Now()
	return workflows.PollInput{
		Spec: workflows.WaitForSpec{
			Probe:      workflows.Probe{Tool: "demo.read_file", Args: json.RawMessage(`{}`)},
			Until:      until,
			PollSec:    1,
			MaxWaitSec: 7,
		},
		StartedAt: now,
		Deadline:  now.Add(maxWait),
		Poll:      poll,
		QuietFor:  quiet,
	}
}

func runPoll(t *testing.T, prober Prober, in workflows.PollInput, observer Observer, resume *workflows.PollProgress) (workflows.WaitForResult, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	poller := &Poller{Prober: prober, Observer: observer}
	env.RegisterActivityWithOptions(poller.PollProbe, activity.RegisterOptions{Name: workflows.PollProbeActivityName})
	if resume != nil {
		env.SetHeartbeatDetails(*resume)
	}
	val, err := env.ExecuteActivity(workflows.PollProbeActivityName, in)
	if err != nil {
		return workflows.WaitForResult{}, err
	}
	var res workflows.WaitForResult
	require.NoError(t, val.Get(&res))
	return res, nil
}

var matchesReady = workflows.Until{Kind: workflows.ConditionMatches, Pattern: "READY"}

func TestPollProbeMatchesOnTheSampleThatShowsIt(t *testing.T) {
	prober := &scriptedProber{steps: []step{text("starting"), text("starting"), text("READY now")}}
	obs := &recordingObserver{}
	res, err := runPoll(t, prober, input(matchesReady, 10*time.Millisecond, 5*time.Second, 0), obs, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonMatched, res.Reason)
	assert.Equal(t, workflows.ConditionMatches, res.Condition)
	assert.Equal(t, 3, res.Samples)
	assert.Equal(t, "READY now", res.LastObservation)
	assert.Equal(t, 7, res.EffectiveMaxWaitSec)
	assert.Equal(t, 3, prober.callCount())
	require.Len(t, obs.samples, 3, "one progress sample per probe call")
	assert.Equal(t, 1, obs.samples[0].Number)
	assert.Equal(t, "READY now", obs.samples[2].Observation)
	assert.Equal(t, []workflows.WaitForResult{res}, obs.results, "the result is published the moment it is known")
}

func TestPollProbeTakesTheFirstSampleAtOnce(t *testing.T) {
	prober := &scriptedProber{steps: []step{text("READY")}}
	// A poll interval far beyond the test's patience: only an immediate
	// first sample lets this return.
	res, err := runPoll(t, prober, input(matchesReady, time.Hour, 2*time.Hour, 0), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Samples)
	assert.Less(t, res.ElapsedSec, 60.0)
}

func TestPollProbeNotMatches(t *testing.T) {
	prober := &scriptedProber{steps: []step{text("pod-a Terminating"), text("")}}
	res, err := runPoll(t, prober, input(workflows.Until{Kind: workflows.ConditionNotMatches, Pattern: "Terminating"},
		10*time.Millisecond, 5*time.Second, 0), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonMatched, res.Reason)
	assert.Equal(t, workflows.ConditionNotMatches, res.Condition)
	assert.Equal(t, 2, res.Samples)
}

func TestPollProbeSettlesWhenQuiet(t *testing.T) {
	prober := &scriptedProber{steps: []step{text("1"), text("2"), text("3"), text("3")}}
	res, err := runPoll(t, prober, input(workflows.Until{Kind: workflows.ConditionQuietForSec, QuietForSec: 1},
		20*time.Millisecond, 5*time.Second, 100*time.Millisecond), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonSettled, res.Reason)
	assert.Equal(t, "3", res.LastObservation)
	assert.GreaterOrEqual(t, res.Samples, 4, "three changes, then at least 100ms of \"3\"")
}

func TestPollProbeFailMatches(t *testing.T) {
	prober := &scriptedProber{steps: []step{text("Pending"), text("CrashLoopBackOff")}}
	until := matchesReady
	until.FailPattern = "CrashLoop"
	res, err := runPoll(t, prober, input(until, 10*time.Millisecond, 5*time.Second, 0), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonFailed, res.Reason)
	assert.Equal(t, workflows.ConditionFailMatches, res.Condition)
	assert.Equal(t, 2, res.Samples)
}

func TestPollProbeTimesOutWithTheLastObservation(t *testing.T) {
	prober := &scriptedProber{steps: []step{text("Pending")}}
	in := input(matchesReady, 40*time.Millisecond, 300*time.Millisecond, 0)
	res, err := runPoll(t, prober, in, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Empty(t, res.Condition)
	assert.Equal(t, "Pending", res.LastObservation)
	// 0, 40, ..., 280 and one on the bound at 300: a sample lands on the bound.
	assert.Equal(t, 9, res.Samples)
	assert.GreaterOrEqual(t, res.ElapsedSec, 0.3)
}

func TestPollProbeHungProbeCannotStretchTheWait(t *testing.T) {
	prober := &scriptedProber{steps: []step{text("Pending"), {hang: true}}}
	in := input(matchesReady, 20*time.Millisecond, 300*time.Millisecond, 0)
	start := time.Now()
	res, err := runPoll(t, prober, in, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, "Pending", res.LastObservation, "the previous observation")
	assert.Equal(t, 1, res.Samples)
	assert.Less(t, time.Since(start), 300*time.Millisecond+FinalSampleAllowance+2*time.Second)
}

func TestPollProbeHungFirstCallIsAnError(t *testing.T) {
	prober := &scriptedProber{steps: []step{{hang: true}}}
	_, err := runPoll(t, prober, input(matchesReady, 20*time.Millisecond, 200*time.Millisecond, 0), nil, nil)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, workflows.ErrTypeProbeHung, appErr.Type())
	assert.True(t, appErr.NonRetryable())
	assert.Contains(t, appErr.Message(), "probe demo.read_file hung: sample 1 did not return within max_wait_sec 7")
}

func TestPollProbeOutputOverTheLimitFailsNamingSampleAndSize(t *testing.T) {
	big := strings.Repeat("x", 300*1024)
	prober := &scriptedProber{steps: []step{text("small"), text(big)}}
	_, err := runPoll(t, prober, input(matchesReady, 10*time.Millisecond, 5*time.Second, 0), nil, nil)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, workflows.ErrTypeProbeOutputTooLarge, appErr.Type())
	assert.Equal(t, "sample 2: probe demo.read_file returned 307200 bytes (300.0 KiB), over the 256 KiB limit", appErr.Message())
}

func TestPollProbeOutputOfExactlyTheLimitIsFine(t *testing.T) {
	exact := strings.Repeat("x", workflows.MaxObservationBytes-5) + "READY"
	prober := &scriptedProber{steps: []step{text(exact)}}
	res, err := runPoll(t, prober, input(matchesReady, 10*time.Millisecond, 5*time.Second, 0), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonMatched, res.Reason)
}

func TestPollProbeIsErrorResultFailsQuotingIt(t *testing.T) {
	prober := &scriptedProber{steps: []step{{out: ProbeOutput{Text: "pods \"web\" not found", IsError: true}}}}
	_, err := runPoll(t, prober, input(matchesReady, 10*time.Millisecond, 5*time.Second, 0), nil, nil)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, workflows.ErrTypeProbeReturnedError, appErr.Type())
	assert.Equal(t, `sample 1: probe demo.read_file returned an error: "pods \"web\" not found"`, appErr.Message())
}

func TestPollProbeCarriesOnWhileTheServerIsUnavailable(t *testing.T) {
	down := &UnavailableError{Server: "demo", Err: errors.New("connection refused")}
	prober := &scriptedProber{steps: []step{text("starting"), {err: down}, {err: down}, text("READY")}}
	res, err := runPoll(t, prober, input(matchesReady, 10*time.Millisecond, 5*time.Second, 0), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonMatched, res.Reason)
	assert.Equal(t, 2, res.Samples, "failed attempts are not samples")
	assert.Equal(t, 4, prober.callCount())
	assert.Empty(t, res.ProbeError)
}

func TestPollProbeTimeoutWhileUnavailableSaysWhy(t *testing.T) {
	down := &UnavailableError{Server: "demo", Err: errors.New("connection refused")}
	prober := &scriptedProber{steps: []step{text("starting"), {err: down}}}
	res, err := runPoll(t, prober, input(matchesReady, 20*time.Millisecond, 200*time.Millisecond, 0), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, "starting", res.LastObservation)
	assert.Equal(t, `downstream MCP server "demo" is unavailable: connection refused`, res.ProbeError)
}

func TestPollProbeResumesFromItsLastHeartbeat(t *testing.T) {
	in := input(workflows.Until{Kind: workflows.ConditionQuietForSec, QuietForSec: 1}, 10*time.Millisecond, 5*time.Second, 150*time.Millisecond)
	// Before the crash: 5 samples, "same" unchanged since 100ms ago.
	resume := workflows.PollProgress{
		Samples: 5, HasObservation: true, LastObservation: "same",
		QuietSince: time.Now().Add(-100 * time.Millisecond), Attempts: 5, LastAttemptAt: time.Now().Add(-20 * time.Millisecond),
	}
	prober := &scriptedProber{steps: []step{text("same")}}
	res, err := runPoll(t, prober, in, nil, &resume)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonSettled, res.Reason)
	assert.Equal(t, 5+prober.callCount(), res.Samples, "samples before and after the restart both count")
	assert.Less(t, prober.callCount(), 15, "the quiet window carried over: 150ms minus the 100ms already quiet")
}

func TestPollProbeResumedAfterTheDeadlineEndsAtOnce(t *testing.T) {
	in := input(matchesReady, 10*time.Millisecond, 50*time.Millisecond, 0)
	in.StartedAt = in.StartedAt.Add(-time.Second)
	in.Deadline = in.Deadline.Add(-time.Second)
	resume := workflows.PollProgress{Samples: 3, HasObservation: true, LastObservation: "Pending", Attempts: 3,
		LastAttemptAt: in.Deadline}
	prober := &scriptedProber{steps: []step{text("READY")}}
	res, err := runPoll(t, prober, in, nil, &resume)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, 3, res.Samples)
	assert.Equal(t, 0, prober.callCount())
}

// slowJudge stands in for a match that runs until it is stopped.
type slowJudge struct {
	mu      sync.Mutex
	started time.Time
}

func (j *slowJudge) judge(ctx context.Context, _ *workflows.Matcher, _ workflows.PollProgress, _ time.Time) (workflows.WaitReason, workflows.ConditionKind, bool, error) {
	j.mu.Lock()
	j.started = time.Now()
	j.mu.Unlock()
	<-ctx.Done()
	return "", "", false, ctx.Err()
}

func (j *slowJudge) startedAt() time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.started
}

func TestPollProbeHeartbeatsWhileAMatchRunsAndTheBoundHolds(t *testing.T) {
	prober := &scriptedProber{steps: []step{text("Pending")}}
	judge := &slowJudge{}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	beats := &beatCounter{}
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{beats}})
	poller := &Poller{Prober: prober, Judge: judge.judge}
	env.RegisterActivityWithOptions(poller.PollProbe, activity.RegisterOptions{Name: workflows.PollProbeActivityName})
	// The test environment has no heartbeat timeout: the loop beats every
	// second, so a 2.5 s bound sees at least two beats during the match.
	in := input(matchesReady, 10*time.Millisecond, 2500*time.Millisecond, 0)
	val, err := env.ExecuteActivity(workflows.PollProbeActivityName, in)
	elapsed := time.Since(in.StartedAt)
	require.NoError(t, err)
	var res workflows.WaitForResult
	require.NoError(t, val.Get(&res))

	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason, "a match still running at the bound ends the wait as a timeout")
	assert.Equal(t, "Pending", res.LastObservation)
	assert.Equal(t, 1, prober.callCount(), "no sample is taken while the match runs")
	assert.Less(t, elapsed, 2500*time.Millisecond+FinalSampleAllowance, "the bound holds: max_wait + 1 s")

	during := beats.since(judge.startedAt())
	assert.GreaterOrEqual(t, during, 2, "heartbeats keep flowing while the match runs")
}

// beatCounter notes when the activity records each heartbeat (before the
// SDK throttles them).
type beatCounter struct {
	interceptor.WorkerInterceptorBase
	mu    sync.Mutex
	beats []time.Time
}

func (b *beatCounter) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	in := &beatInbound{counter: b}
	in.Next = next
	return in
}

// since counts the heartbeats recorded after t.
func (b *beatCounter) since(t time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, at := range b.beats {
		if at.After(t) {
			n++
		}
	}
	return n
}

type beatInbound struct {
	interceptor.ActivityInboundInterceptorBase
	counter *beatCounter
}

func (i *beatInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	out := &beatOutbound{counter: i.counter}
	out.Next = outbound
	return i.Next.Init(out)
}

type beatOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
	counter *beatCounter
}

func (o *beatOutbound) RecordHeartbeat(ctx context.Context, details ...any) {
	o.counter.mu.Lock()
	o.counter.beats = append(o.counter.beats, time.Now())
	o.counter.mu.Unlock()
	o.Next.RecordHeartbeat(ctx, details...)
}

// pathologicalPattern is [xy]x{n} six times then z, with n as large as
// MaxPatternInstructions allows: the costliest shape of pattern the parser
// accepts, against an output of x's.
func pathologicalPattern(t *testing.T) string {
	t.Helper()
	for n := 999; n > 0; n-- {
		p := strings.Repeat(fmt.Sprintf("[xy]x{%d}", n), 6) + "z"
		size, err := workflows.PatternInstructions(p)
		require.NoError(t, err)
		if size <= workflows.MaxPatternInstructions {
			return p
		}
	}
	t.Fatal("no pattern fits")
	return ""
}

func TestPollProbeCostlyAllowedPatternCannotStretchTheWait(t *testing.T) {
	pattern := pathologicalPattern(t)
	_, err := workflows.ParseWaitFor(json.RawMessage(fmt.Sprintf(
		`{"probe":{"tool":"x"},"until":{"matches":%q},"poll_sec":1,"max_wait_sec":3}`, pattern)), anyTool{})
	require.NoError(t, err, "the pattern is within the limits")

	big := strings.Repeat("x", workflows.MaxObservationBytes)
	prober := &scriptedProber{steps: []step{text(big)}}
	in := input(workflows.Until{Kind: workflows.ConditionMatches, Pattern: pattern}, 10*time.Millisecond, 300*time.Millisecond, 0)
	res, err := runPoll(t, prober, in, nil, nil)
	elapsed := time.Since(in.StartedAt)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, 1, res.Samples)
	assert.Less(t, elapsed, 300*time.Millisecond+FinalSampleAllowance, "the match is stopped at the bound")
}

type anyTool struct{}

func (anyTool) ResolveProbeTool(name string) (string, error) { return "demo." + name, nil }
