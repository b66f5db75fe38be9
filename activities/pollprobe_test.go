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

// The probe loop runs on a fake clock that starts at t0, when the wait began.
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// scriptedProber answers each call with the next step of its script; the
// last step repeats. A hung step moves the clock to the call's deadline and
// waits for the call to be cancelled.
type scriptedProber struct {
	clock *fakeClock

	mu    sync.Mutex
	steps []step
	calls []time.Duration // when each call started, since t0
}

type step struct {
	out  ProbeOutput
	err  error
	hang bool
}

func text(s string) step { return step{out: ProbeOutput{Text: s}} }

func newProber(clock *fakeClock, steps ...step) *scriptedProber {
	return &scriptedProber{clock: clock, steps: steps}
}

func (p *scriptedProber) CallProbe(ctx context.Context, tool string, args json.RawMessage) (ProbeOutput, error) {
	p.mu.Lock()
	s := p.steps[min(len(p.calls), len(p.steps)-1)]
	p.calls = append(p.calls, p.clock.Now().Sub(t0))
	p.mu.Unlock()
	if s.hang {
		if deadline, ok := ctx.Deadline(); ok {
			p.clock.AdvanceTo(deadline)
		}
		<-ctx.Done()
		return ProbeOutput{}, ctx.Err()
	}
	return s.out, s.err
}

func (p *scriptedProber) callCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

func (p *scriptedProber) callTimes() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Duration(nil), p.calls...)
}

func seconds(s ...float64) []time.Duration {
	var ds []time.Duration
	for _, x := range s {
		ds = append(ds, time.Duration(x*float64(time.Second)))
	}
	return ds
}

// recordingObserver keeps every sample it is told of.
type recordingObserver struct {
	mu      sync.Mutex
	samples []workflows.Sample
	results []workflows.WaitForResult
}

func (o *recordingObserver) Observe(_ string, event workflows.WaitEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch e := event.(type) {
	case workflows.Sample:
		o.samples = append(o.samples, e)
	case workflows.WaitForResult:
		o.results = append(o.results, e)
	}
}

// input is the activity's input for a wait that began at t0.
func input(until workflows.Until, pollSec, maxWaitSec int) workflows.PollInput {
	return workflows.PollInput{
		Spec: workflows.WaitForSpec{
			Probe:      workflows.Probe{Tool: "demo.read_file", Args: json.RawMessage(`{}`)},
			Until:      until,
			PollSec:    pollSec,
			MaxWaitSec: maxWaitSec,
		},
		StartedAt: t0,
	}
}

// pollRun is one run of the activity in Temporal's test environment.
type pollRun struct {
	clock    *fakeClock
	prober   Prober
	observer Observer
	judge    JudgeFunc
	resume   *workflows.PollProgress
	beats    *beatCounter
}

func (r pollRun) run(t *testing.T, in any) (workflows.WaitForResult, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	if r.beats != nil {
		env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{r.beats}})
	}
	poller := &Poller{Prober: r.prober, Observer: r.observer, Judge: r.judge, Clock: r.clock}
	env.RegisterActivityWithOptions(poller.PollProbe, activity.RegisterOptions{Name: workflows.PollProbeActivityName})
	if r.resume != nil {
		env.SetHeartbeatDetails(*r.resume)
	}
	val, err := env.ExecuteActivity(workflows.PollProbeActivityName, in)
	if err != nil {
		return workflows.WaitForResult{}, err
	}
	var res workflows.WaitForResult
	require.NoError(t, val.Get(&res))
	return res, nil
}

func runPoll(t *testing.T, clock *fakeClock, prober Prober, in workflows.PollInput, observer Observer, resume *workflows.PollProgress) (workflows.WaitForResult, error) {
	t.Helper()
	return pollRun{clock: clock, prober: prober, observer: observer, resume: resume}.run(t, in)
}

var matchesReady = workflows.Until{Kind: workflows.ConditionMatches, Pattern: "READY"}

func TestPollProbeMatchesOnTheSampleThatShowsIt(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, text("starting"), text("starting"), text("READY now"))
	obs := &recordingObserver{}
	res, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), obs, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitForResult{
		Reason: workflows.WaitReasonMatched, Condition: workflows.ConditionMatches, LastObservation: "READY now",
		ElapsedSec: 4, Samples: 3, EffectiveMaxWaitSec: 10,
	}, res)
	assert.Equal(t, seconds(0, 2, 4), prober.callTimes())
	assert.Equal(t, []workflows.Sample{
		{Number: 1, Expected: 6, Observation: "starting"},
		{Number: 2, Expected: 6, Observation: "starting"},
		{Number: 3, Expected: 6, Observation: "READY now"},
	}, obs.samples, "one progress sample per probe call")
	assert.Equal(t, []workflows.WaitForResult{res}, obs.results, "the result is published the moment it is known")
}

func TestPollProbeEndsOnTheSampleThatFlips(t *testing.T) {
	for k := 1; k <= 6; k++ {
		t.Run(fmt.Sprintf("sample %d", k), func(t *testing.T) {
			clock := newFakeClock(t0)
			steps := make([]step, 0, k)
			for range k - 1 {
				steps = append(steps, text("Pending"))
			}
			prober := newProber(clock, append(steps, text("READY"))...)
			res, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), nil, nil)
			require.NoError(t, err)
			assert.Equal(t, workflows.WaitReasonMatched, res.Reason)
			assert.Equal(t, k, res.Samples)
			assert.Equal(t, k, prober.callCount())
			assert.Equal(t, float64(2*(k-1)), res.ElapsedSec)
		})
	}
}

func TestPollProbeTakesTheFirstSampleAtOnce(t *testing.T) {
	clock := newFakeClock(t0.Add(1500 * time.Millisecond)) // the activity starts a little after the wait
	prober := newProber(clock, text("READY"))
	res, err := runPoll(t, clock, prober, input(matchesReady, 60, 3600), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Samples)
	assert.Equal(t, seconds(1.5), prober.callTimes())
	assert.Equal(t, 1.5, res.ElapsedSec)
}

func TestPollProbeNotMatches(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, text("pod-a Terminating"), text(""))
	res, err := runPoll(t, clock, prober, input(workflows.Until{Kind: workflows.ConditionNotMatches, Pattern: "Terminating"}, 2, 10), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonMatched, res.Reason)
	assert.Equal(t, workflows.ConditionNotMatches, res.Condition)
	assert.Equal(t, 2, res.Samples)
}

func TestPollProbeSettlesWhenQuiet(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, text("1"), text("2"), text("3"))
	res, err := runPoll(t, clock, prober, input(workflows.Until{Kind: workflows.ConditionQuietForSec, QuietForSec: 3}, 1, 10), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonSettled, res.Reason)
	assert.Equal(t, workflows.ConditionQuietForSec, res.Condition)
	assert.Equal(t, "3", res.LastObservation)
	assert.Equal(t, 6, res.Samples, `"3" first at 2 s, then quiet until 5 s`)
	assert.Equal(t, 5.0, res.ElapsedSec)
}

func TestPollProbeFailMatches(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, text("Pending"), text("CrashLoopBackOff"))
	until := matchesReady
	until.FailPattern = "CrashLoop"
	res, err := runPoll(t, clock, prober, input(until, 2, 10), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonFailed, res.Reason)
	assert.Equal(t, workflows.ConditionFailMatches, res.Condition)
	assert.Equal(t, 2, res.Samples)
}

func TestPollProbeTimesOutWithTheLastObservation(t *testing.T) {
	for _, tc := range []struct {
		pollSec, maxWaitSec int
		calls               []time.Duration
	}{
		{2, 10, seconds(0, 2, 4, 6, 8, 10)},
		{3, 10, seconds(0, 3, 6, 9, 10)}, // the last interval is trimmed onto the bound
	} {
		t.Run(fmt.Sprintf("poll %d max %d", tc.pollSec, tc.maxWaitSec), func(t *testing.T) {
			clock := newFakeClock(t0)
			prober := newProber(clock, text("Pending"))
			obs := &recordingObserver{}
			res, err := runPoll(t, clock, prober, input(matchesReady, tc.pollSec, tc.maxWaitSec), obs, nil)
			require.NoError(t, err)
			assert.Equal(t, workflows.WaitForResult{
				Reason: workflows.WaitReasonTimeout, LastObservation: "Pending",
				ElapsedSec: float64(tc.maxWaitSec), Samples: len(tc.calls), EffectiveMaxWaitSec: tc.maxWaitSec,
			}, res)
			assert.Equal(t, tc.calls, prober.callTimes())
			require.Len(t, obs.samples, len(tc.calls))
			assert.Equal(t, len(tc.calls), obs.samples[len(tc.calls)-1].Expected, "a wait run to its bound takes the expected samples")
		})
	}
}

func TestPollProbeHungProbeCannotStretchTheWait(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, text("Pending"), step{hang: true})
	res, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, "Pending", res.LastObservation, "the previous observation")
	assert.Equal(t, 1, res.Samples)
	assert.Equal(t, 10.0, res.ElapsedSec, "the hung call is abandoned on the bound")
	assert.Equal(t, seconds(0, 2), prober.callTimes())
}

func TestPollProbeHungSampleOnTheBoundGetsItsAllowance(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, text("Pending"), text("Pending"), text("Pending"), text("Pending"), step{hang: true})
	res, err := runPoll(t, clock, prober, input(matchesReady, 3, 10), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, 4, res.Samples)
	assert.Equal(t, seconds(0, 3, 6, 9, 10), prober.callTimes())
	assert.Equal(t, (10*time.Second).Seconds()+FinalSampleAllowance.Seconds(), res.ElapsedSec)
}

func TestPollProbeHungFirstCallIsAnError(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, step{hang: true})
	_, err := runPoll(t, clock, prober, input(matchesReady, 2, 7), nil, nil)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, workflows.ErrTypeProbeHung, appErr.Type())
	assert.True(t, appErr.NonRetryable())
	assert.Contains(t, appErr.Message(), "probe demo.read_file hung: sample 1 did not return within max_wait_sec 7")
}

func TestPollProbeOutputOverTheLimitFailsNamingSampleAndSize(t *testing.T) {
	big := strings.Repeat("x", 300*1024)
	clock := newFakeClock(t0)
	prober := newProber(clock, text("small"), text(big))
	_, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), nil, nil)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, workflows.ErrTypeProbeOutputTooLarge, appErr.Type())
	assert.Equal(t, "sample 2: probe demo.read_file returned 307200 bytes (300.0 KiB), over the 256 KiB limit", appErr.Message())
}

func TestPollProbeOutputOfExactlyTheLimitIsFine(t *testing.T) {
	exact := strings.Repeat("x", workflows.MaxObservationBytes-5) + "READY"
	clock := newFakeClock(t0)
	res, err := runPoll(t, clock, newProber(clock, text(exact)), input(matchesReady, 2, 10), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonMatched, res.Reason)
}

func TestPollProbeIsErrorResultFailsQuotingIt(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, step{out: ProbeOutput{Text: "pods \"web\" not found", IsError: true}})
	_, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), nil, nil)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, workflows.ErrTypeProbeReturnedError, appErr.Type())
	assert.Equal(t, `sample 1: probe demo.read_file returned an error: "pods \"web\" not found"`, appErr.Message())
}

func TestPollProbeCarriesOnWhileTheServerIsUnavailable(t *testing.T) {
	down := &UnavailableError{Server: "demo", Err: errors.New("connection refused")}
	clock := newFakeClock(t0)
	prober := newProber(clock, text("starting"), step{err: down}, step{err: down}, text("READY"))
	res, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonMatched, res.Reason)
	assert.Equal(t, 2, res.Samples, "failed attempts are not samples")
	assert.Equal(t, seconds(0, 2, 4, 6), prober.callTimes(), "failed attempts keep the schedule")
	assert.Empty(t, res.ProbeError)
}

func TestPollProbeTimeoutWhileUnavailableSaysWhy(t *testing.T) {
	down := &UnavailableError{Server: "demo", Err: errors.New("connection refused")}
	clock := newFakeClock(t0)
	prober := newProber(clock, text("starting"), step{err: down})
	res, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, "starting", res.LastObservation)
	assert.Equal(t, 1, res.Samples)
	assert.Equal(t, `downstream MCP server "demo" is unavailable: connection refused`, res.ProbeError)
}

func TestPollProbeResumesTheCountFromItsLastHeartbeat(t *testing.T) {
	// Before the crash: samples at 0, 2 and 4 s; the retry starts at 5 s.
	clock := newFakeClock(t0.Add(5 * time.Second))
	resume := workflows.PollProgress{
		Samples: 3, HasObservation: true, LastObservation: "Pending",
		QuietSince: t0, Attempts: 3, LastAttemptAt: t0.Add(4 * time.Second),
	}
	prober := newProber(clock, text("Pending"))
	obs := &recordingObserver{}
	res, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), obs, &resume)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, 6, res.Samples, "samples before and after the restart both count")
	assert.Equal(t, seconds(6, 8, 10), prober.callTimes(), "the schedule carries on where it was")
	assert.Equal(t, 10.0, res.ElapsedSec)
	require.Len(t, obs.samples, 3)
	assert.Equal(t, workflows.Sample{Number: 4, Expected: 6, Observation: "Pending"}, obs.samples[0])
	assert.Equal(t, workflows.Sample{Number: 6, Expected: 6, Observation: "Pending"}, obs.samples[2])
}

// A loop resumed (or woken) whole intervals late takes one sample for the
// intervals it missed, on its grid, then carries on: no burst of catch-up
// calls back to back.
func TestPollProbeResumedLateTakesOneSampleForTheIntervalsItMissed(t *testing.T) {
	// Before the crash: samples at 0 and 2 s; the retry starts at 9.1 s.
	clock := newFakeClock(t0.Add(9100 * time.Millisecond))
	resume := workflows.PollProgress{
		Samples: 2, HasObservation: true, LastObservation: "Pending",
		QuietSince: t0, Attempts: 2, LastAttemptAt: t0.Add(2 * time.Second),
	}
	prober := newProber(clock, text("Pending"))
	res, err := runPoll(t, clock, prober, input(matchesReady, 2, 14), nil, &resume)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, seconds(9.1, 10, 12, 14), prober.callTimes(), "one late sample (on the grid at 8 s), then the grid")
	assert.Equal(t, 6, res.Samples)
}

func TestPollProbeResumedQuietWindowCarriesOver(t *testing.T) {
	// Before the crash: "same" since 2 s, last sampled at 4 s.
	clock := newFakeClock(t0.Add(5 * time.Second))
	resume := workflows.PollProgress{
		Samples: 3, HasObservation: true, LastObservation: "same",
		QuietSince: t0.Add(2 * time.Second), Attempts: 3, LastAttemptAt: t0.Add(4 * time.Second),
	}
	prober := newProber(clock, text("same"))
	res, err := runPoll(t, clock, prober, input(workflows.Until{Kind: workflows.ConditionQuietForSec, QuietForSec: 6}, 2, 20), nil, &resume)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonSettled, res.Reason)
	assert.Equal(t, seconds(6, 8), prober.callTimes(), "quiet from 2 s, settled at 8 s")
	assert.Equal(t, 5, res.Samples)
}

func TestPollProbeResumedAfterTheDeadlineEndsAtOnce(t *testing.T) {
	clock := newFakeClock(t0.Add(12 * time.Second))
	resume := workflows.PollProgress{Samples: 3, HasObservation: true, LastObservation: "Pending", Attempts: 3,
		LastAttemptAt: t0.Add(10 * time.Second)}
	prober := newProber(clock, text("READY"))
	res, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), nil, &resume)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, 3, res.Samples)
	assert.Equal(t, 0, prober.callCount())
}

// A loop lost while its call on the deadline was in flight (the probe
// answered, the worker died before recording it) takes that call again when
// it resumes, past the deadline: its answer decides the wait, not the
// sample before it (the crash soak's wait that flipped, was read after the
// flip, and answered timeout with the sample before).
func TestPollProbeResumedWithItsFinalCallOpenTakesItAgain(t *testing.T) {
	clock := newFakeClock(t0.Add(30 * time.Second))
	resume := workflows.PollProgress{Samples: 3, HasObservation: true, LastObservation: "Pending", Attempts: 4,
		LastAttemptAt: t0.Add(10 * time.Second), AttemptOpen: true}
	prober := newProber(clock, text("READY"))
	res, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), nil, &resume)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonMatched, res.Reason)
	assert.Equal(t, "READY", res.LastObservation)
	assert.Equal(t, 4, res.Samples)
	assert.Equal(t, 1, prober.callCount(), "one call, then the wait is over")
}

// An input recorded by an earlier version carries the schedule as well; the
// activity ignores it and derives the same schedule from spec and start.
func TestPollProbeRunsAnInputOfAnEarlierVersion(t *testing.T) {
	type earlierPollInput struct {
		Spec      workflows.WaitForSpec `json:"spec"`
		StartedAt time.Time             `json:"started_at"`
		Deadline  time.Time             `json:"deadline"`
		Poll      time.Duration         `json:"poll"`
		QuietFor  time.Duration         `json:"quiet_for"`
	}
	in := input(matchesReady, 2, 10)
	clock := newFakeClock(t0)
	prober := newProber(clock, text("Pending"))
	res, err := pollRun{clock: clock, prober: prober}.run(t, earlierPollInput{
		Spec: in.Spec, StartedAt: in.StartedAt, Deadline: t0.Add(10 * time.Second), Poll: 2 * time.Second,
	})
	require.NoError(t, err)
	assert.Equal(t, 6, res.Samples)
	assert.Equal(t, seconds(0, 2, 4, 6, 8, 10), prober.callTimes())
}

// beatCounter counts the heartbeats the activity records (before the SDK
// throttles them) and tells of each on recorded.
type beatCounter struct {
	interceptor.WorkerInterceptorBase
	recorded chan struct{}
}

func newBeatCounter() *beatCounter { return &beatCounter{recorded: make(chan struct{}, 1000)} }

func (b *beatCounter) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	in := &beatInbound{counter: b}
	in.Next = next
	return in
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
	o.counter.recorded <- struct{}{}
	o.Next.RecordHeartbeat(ctx, details...)
}

// slowJudge stands in for a match that runs until it is stopped: it lets
// the clock run a second at a time, noting each heartbeat the loop records
// meanwhile, then runs it to the match's deadline.
type slowJudge struct {
	clock *fakeClock
	beats *beatCounter
	ticks int

	mu        sync.Mutex
	beatsSeen int
}

func (j *slowJudge) judge(ctx context.Context, _ *workflows.Matcher, _ workflows.PollProgress, _ time.Time) (workflows.WaitReason, workflows.ConditionKind, bool, error) {
	for len(j.beats.recorded) > 0 {
		<-j.beats.recorded // recorded before the match began
	}
	for range j.ticks {
		j.clock.Advance(time.Second)
		select {
		case <-j.beats.recorded:
			j.mu.Lock()
			j.beatsSeen++
			j.mu.Unlock()
		case <-time.After(time.Minute): // no heartbeat: fail rather than hang
		}
	}
	if deadline, ok := ctx.Deadline(); ok {
		j.clock.AdvanceTo(deadline)
	}
	<-ctx.Done()
	return "", "", false, ctx.Err()
}

func (j *slowJudge) seen() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.beatsSeen
}

func TestPollProbeHeartbeatsWhileAMatchRunsAndTheBoundHolds(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, text("Pending"))
	beats := newBeatCounter()
	// The test environment has no heartbeat timeout: the loop beats every
	// second, so a match that runs two seconds sees two beats.
	judge := &slowJudge{clock: clock, beats: beats, ticks: 2}
	res, err := pollRun{clock: clock, prober: prober, judge: judge.judge, beats: beats}.run(t, input(matchesReady, 1, 3))
	require.NoError(t, err)

	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason, "a match still running at the bound ends the wait as a timeout")
	assert.Equal(t, "Pending", res.LastObservation)
	assert.Equal(t, 1, prober.callCount(), "no sample is taken while the match runs")
	assert.Equal(t, 3.0, res.ElapsedSec, "the bound holds")
	assert.Equal(t, 2, judge.seen(), "heartbeats keep flowing while the match runs")
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
	clock := newFakeClock(t0)
	prober := newProber(clock, text(big))
	// The real match, with the clock run to the match's deadline the moment
	// it begins.
	stopped := make(chan error, 1)
	judge := func(ctx context.Context, m *workflows.Matcher, p workflows.PollProgress, now time.Time) (workflows.WaitReason, workflows.ConditionKind, bool, error) {
		type verdict struct {
			reason workflows.WaitReason
			cond   workflows.ConditionKind
			done   bool
			err    error
		}
		answer := make(chan verdict, 1)
		go func() {
			var v verdict
			v.reason, v.cond, v.done, v.err = m.JudgeContext(ctx, p, now)
			answer <- v
		}()
		if deadline, ok := ctx.Deadline(); ok {
			clock.AdvanceTo(deadline)
		}
		v := <-answer
		stopped <- v.err
		return v.reason, v.cond, v.done, v.err
	}
	in := input(workflows.Until{Kind: workflows.ConditionMatches, Pattern: pattern}, 1, 3)
	res, err := pollRun{clock: clock, prober: prober, judge: judge}.run(t, in)
	require.NoError(t, err)
	assert.ErrorIs(t, <-stopped, context.DeadlineExceeded, "the match was stopped, not finished")
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, 1, res.Samples)
	assert.Equal(t, 3.0, res.ElapsedSec, "the match is stopped at the bound")
}

type anyTool struct{}

func (anyTool) ResolveProbeTool(name string) (string, error) { return "demo." + name, nil }
