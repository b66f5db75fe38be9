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
	"go.temporal.io/sdk/temporal"

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
	mu          sync.Mutex
	samples     []workflows.Sample
	results     []workflows.WaitForResult
	unavailable []workflows.ProbeUnavailable
}

func (o *recordingObserver) Observe(_ string, event workflows.WaitEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch e := event.(type) {
	case workflows.Sample:
		o.samples = append(o.samples, e)
	case workflows.WaitForResult:
		o.results = append(o.results, e)
	case workflows.ProbeUnavailable:
		o.unavailable = append(o.unavailable, e)
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

// pollRun is one run of the probe loop.
type pollRun struct {
	clock    *fakeClock
	prober   Prober
	observer Observer
	// resumed, when set, runs the loop as its host resumes it, from this
	// record.
	resumed *workflows.ProbeRecord
	// records, when set, receives what the loop records.
	records *[]workflows.ProbeRecord
}

func (r pollRun) run(t *testing.T, in workflows.PollInput) (workflows.WaitForResult, error) {
	t.Helper()
	poller := &Poller{Prober: r.prober, Observer: r.observer, Clock: r.clock}
	run := ProbeRun{WorkflowID: "test-workflow-id", Input: in, Resumed: r.resumed}
	if r.records != nil {
		run.Record = func(_ context.Context, rec workflows.ProbeRecord) error {
			*r.records = append(*r.records, rec)
			return nil
		}
	}
	return poller.Run(context.Background(), run)
}

func runPoll(t *testing.T, clock *fakeClock, prober Prober, in workflows.PollInput, observer Observer) (workflows.WaitForResult, error) {
	t.Helper()
	return pollRun{clock: clock, prober: prober, observer: observer}.run(t, in)
}

var matchesReady = workflows.Until{Kind: workflows.ConditionMatches, Pattern: "READY"}

func TestPollProbeMatchesOnTheSampleThatShowsIt(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, text("starting"), text("starting"), text("READY now"))
	obs := &recordingObserver{}
	res, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), obs)
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
	assert.Empty(t, obs.results, "the result is its host's to publish, once Temporal recorded it")
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
			res, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), nil)
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
	res, err := runPoll(t, clock, prober, input(matchesReady, 60, 3600), nil)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Samples)
	assert.Equal(t, seconds(1.5), prober.callTimes())
	assert.Equal(t, 1.5, res.ElapsedSec)
}

func TestPollProbeNotMatches(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, text("pod-a Terminating"), text(""))
	res, err := runPoll(t, clock, prober, input(workflows.Until{Kind: workflows.ConditionNotMatches, Pattern: "Terminating"}, 2, 10), nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonMatched, res.Reason)
	assert.Equal(t, workflows.ConditionNotMatches, res.Condition)
	assert.Equal(t, 2, res.Samples)
}

func TestPollProbeSettlesWhenQuiet(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, text("1"), text("2"), text("3"))
	res, err := runPoll(t, clock, prober, input(workflows.Until{Kind: workflows.ConditionQuietForSec, QuietForSec: 3}, 1, 10), nil)
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
	res, err := runPoll(t, clock, prober, input(until, 2, 10), nil)
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
			res, err := runPoll(t, clock, prober, input(matchesReady, tc.pollSec, tc.maxWaitSec), obs)
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
	res, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), nil)
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
	res, err := runPoll(t, clock, prober, input(matchesReady, 3, 10), nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, 4, res.Samples)
	assert.Equal(t, seconds(0, 3, 6, 9, 10), prober.callTimes())
	assert.Equal(t, (10*time.Second).Seconds()+FinalSampleAllowance.Seconds(), res.ElapsedSec)
}

func TestPollProbeHungFirstCallIsAnError(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, step{hang: true})
	_, err := runPoll(t, clock, prober, input(matchesReady, 2, 7), nil)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, workflows.ErrTypeProbeHung, appErr.Type())
	assert.True(t, appErr.NonRetryable())
	assert.Contains(t, appErr.Message(), "probe demo.read_file hung: sample 1 did not return within max_wait_sec 7")
}

// A loop begun late in its wait's bound (its wait began before a crash,
// and the loop resumed near the bound with no record), whose first call
// does not return before the deadline, answers timeout: its probe did not
// have max_wait_sec to answer. (The full soak on 8993f81 saw it twice: a
// call again right after durawait restarted, its probe server still
// starting.)
func TestPollProbeFirstCallOfALateLoopThatMissesTheBoundIsATimeout(t *testing.T) {
	clock := newFakeClock(t0.Add(9 * time.Second))
	prober := newProber(clock, step{hang: true})
	res, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), nil)
	require.NoError(t, err, "not ProbeHung")
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Zero(t, res.Samples)
}

func TestPollProbeOutputOverTheLimitFailsNamingSampleAndSize(t *testing.T) {
	big := strings.Repeat("x", 300*1024)
	clock := newFakeClock(t0)
	prober := newProber(clock, text("small"), text(big))
	_, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), nil)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, workflows.ErrTypeProbeOutputTooLarge, appErr.Type())
	assert.Equal(t, "sample 2: probe demo.read_file returned 307200 bytes (300.0 KiB), over the 256 KiB limit", appErr.Message())
}

func TestPollProbeOutputOfExactlyTheLimitIsFine(t *testing.T) {
	exact := strings.Repeat("x", workflows.MaxObservationBytes-5) + "READY"
	clock := newFakeClock(t0)
	res, err := runPoll(t, clock, newProber(clock, text(exact)), input(matchesReady, 2, 10), nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonMatched, res.Reason)
}

func TestPollProbeIsErrorResultFailsQuotingIt(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, step{out: ProbeOutput{Text: "pods \"web\" not found", IsError: true}})
	_, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), nil)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, workflows.ErrTypeProbeReturnedError, appErr.Type())
	assert.Equal(t, `sample 1: probe demo.read_file returned an error: "pods \"web\" not found"`, appErr.Message())
}

func TestPollProbeCarriesOnWhileTheServerIsUnavailable(t *testing.T) {
	down := &UnavailableError{Server: "demo", Err: errors.New("connection refused")}
	clock := newFakeClock(t0)
	prober := newProber(clock, text("starting"), step{err: down}, step{err: down}, text("READY"))
	obs := &recordingObserver{}
	res, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), obs)
	require.NoError(t, err)
	require.Len(t, obs.unavailable, 2, "each attempt the server missed is told (the front tells its caller once per distinct message)")
	assert.Contains(t, obs.unavailable[0].Message, "connection refused")
	assert.Equal(t, workflows.WaitReasonMatched, res.Reason)
	assert.Equal(t, 2, res.Samples, "failed attempts are not samples")
	assert.Equal(t, seconds(0, 2, 4, 6), prober.callTimes(), "failed attempts keep the schedule")
	assert.Empty(t, res.ProbeError)
}

func TestPollProbeTimeoutWhileUnavailableSaysWhy(t *testing.T) {
	down := &UnavailableError{Server: "demo", Err: errors.New("connection refused")}
	clock := newFakeClock(t0)
	prober := newProber(clock, text("starting"), step{err: down})
	res, err := runPoll(t, clock, prober, input(matchesReady, 2, 10), nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, "starting", res.LastObservation)
	assert.Equal(t, 1, res.Samples)
	assert.Equal(t, `downstream MCP server "demo" is unavailable: connection refused`, res.ProbeError)
}

// A loop its host resumes (after a restart, or adopted from a lost host)
// samples at once and then every poll from there; the samples it took
// before are counted as the schedule would have taken them.
func TestPollProbeResumedSamplesAtOnceAndCountsWhatItsScheduleTook(t *testing.T) {
	// Before the crash: samples at 0, 2 and 4 s; resumed at 5 s.
	clock := newFakeClock(t0.Add(5 * time.Second))
	prober := newProber(clock, text("Pending"))
	obs := &recordingObserver{}
	record := workflows.ProbeRecord{Observed: true, Observation: "Pending"}
	res, err := pollRun{clock: clock, prober: prober, observer: obs, resumed: &record}.run(t, input(matchesReady, 2, 10))
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, seconds(5, 7, 9, 10), prober.callTimes(), "a sample at once, then every poll, the last on the bound")
	assert.Equal(t, 2+4, res.Samples, "the samples at 0 and 2 s, estimated, and the 4 taken since (the first for 4 s)")
	assert.Equal(t, 10.0, res.ElapsedSec)
	require.Len(t, obs.samples, 4)
	assert.Equal(t, 3, obs.samples[0].Number)
}

// A loop resumed with nothing on record (lost before it recorded its
// first observation) counts only its own samples: one whose downstream
// server stays unreachable answers with no samples and no observation,
// never with samples it cannot show.
func TestPollProbeResumedWithNothingOnRecordCountsItsOwnSamples(t *testing.T) {
	clock := newFakeClock(t0.Add(5 * time.Second))
	down := step{err: &UnavailableError{Server: "demo", Err: errors.New("transport closed")}}
	res, err := pollRun{clock: clock, prober: newProber(clock, down), resumed: &workflows.ProbeRecord{}}.run(t, input(matchesReady, 2, 10))
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, 0, res.Samples)
	assert.Empty(t, res.LastObservation)
	assert.Contains(t, res.ProbeError, "transport closed")

	clock = newFakeClock(t0.Add(5 * time.Second))
	res, err = pollRun{clock: clock, prober: newProber(clock, text("Pending")), resumed: &workflows.ProbeRecord{}}.run(t, input(matchesReady, 2, 10))
	require.NoError(t, err)
	assert.Equal(t, 4, res.Samples, "the 4 taken since the resume")
	assert.Equal(t, "Pending", res.LastObservation)
}

func TestPollProbeResumedQuietWindowCarriesOver(t *testing.T) {
	// Before the crash: "same" since 2 s, recorded; resumed at 5 s.
	clock := newFakeClock(t0.Add(5 * time.Second))
	record := workflows.ProbeRecord{Observed: true, Observation: "same", QuietSince: t0.Add(2 * time.Second)}
	prober := newProber(clock, text("same"))
	var records []workflows.ProbeRecord
	res, err := pollRun{clock: clock, prober: prober, resumed: &record, records: &records}.run(t,
		input(workflows.Until{Kind: workflows.ConditionQuietForSec, QuietForSec: 6}, 2, 20))
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonSettled, res.Reason)
	assert.Equal(t, seconds(5, 7, 9), prober.callTimes(), "quiet from 2 s: settled at the first sample from 8 s")
	assert.Empty(t, records, "the window recorded still holds: nothing to record")
}

func TestPollProbeResumedToAChangedOutputClearsTheRecordAndStartsAgain(t *testing.T) {
	clock := newFakeClock(t0.Add(5 * time.Second))
	record := workflows.ProbeRecord{Observed: true, Observation: "before", QuietSince: t0.Add(2 * time.Second)}
	prober := newProber(clock, text("after"))
	var records []workflows.ProbeRecord
	res, err := pollRun{clock: clock, prober: prober, resumed: &record, records: &records}.run(t,
		input(workflows.Until{Kind: workflows.ConditionQuietForSec, QuietForSec: 4}, 1, 20))
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonSettled, res.Reason)
	assert.Equal(t, 9.0, res.ElapsedSec, "quiet from the first sample after the resume (5 s), for 4 s")
	assert.Equal(t, []workflows.ProbeRecord{
		{Observed: true, Observation: "after"},                                      // the window cleared at 5 s: the output differs from the record
		{Observed: true, Observation: "after", QuietSince: t0.Add(5 * time.Second)}, // at 7 s, half the window
	}, records)
}

// A quiet_for_sec wait records its window once half of it has run, and
// clears the record the moment the output changes: an output that settles
// costs one record, one that changes faster than half the window none
// (beyond the observation's own records).
func TestPollProbeRecordsTheQuietWindowHalfwayAndClearsItOnAChange(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, text("A"), text("A"), text("A"), text("B"), text("C"), text("C"))
	var records []workflows.ProbeRecord
	res, err := pollRun{clock: clock, prober: prober, records: &records}.run(t,
		input(workflows.Until{Kind: workflows.ConditionQuietForSec, QuietForSec: 4}, 1, 20))
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonSettled, res.Reason)
	assert.Equal(t, 8.0, res.ElapsedSec, `"C" from 4 s, quiet for 4 s`)
	assert.Equal(t, []workflows.ProbeRecord{
		{Observed: true, Observation: "A"},                                      // the first observation, at 0 s
		{Observed: true, Observation: "A", QuietSince: t0},                      // at 2 s, half the window
		{Observed: true, Observation: "B"},                                      // "B" at 3 s clears the window
		{Observed: true, Observation: "C", QuietSince: t0.Add(4 * time.Second)}, // at 6 s
	}, records, `"C" at 4 s is not recorded on its own: 1 s after "B", within a third of the bound`)
}

// A probe loop records its first observation, and a changed one at most
// once a third of the bound and never on the bound: an output that changes
// at every sample costs three records, whatever the wait lasts.
func TestPollProbeRecordsTheObservationWhenItChangesAtMostOnceAThirdOfTheBound(t *testing.T) {
	for _, maxWait := range []int{30, 300} {
		clock := newFakeClock(t0)
		var steps []step
		for i := range maxWait + 1 {
			steps = append(steps, text(fmt.Sprintf("line %d", i)))
		}
		prober := newProber(clock, steps...)
		var records []workflows.ProbeRecord
		res, err := pollRun{clock: clock, prober: prober, records: &records}.run(t, input(matchesReady, 1, maxWait))
		require.NoError(t, err)
		assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
		third := maxWait / 3
		assert.Equal(t, []workflows.ProbeRecord{
			{Observed: true, Observation: "line 0"},
			{Observed: true, Observation: fmt.Sprintf("line %d", third)},
			{Observed: true, Observation: fmt.Sprintf("line %d", 2*third)},
		}, records, "max_wait_sec %d", maxWait)
	}
}

// An unchanging output is recorded once; a sample that ends the wait is
// not recorded at all (its answer is the record).
func TestPollProbeRecordsAnUnchangingOutputOnceAndAnEndingSampleNever(t *testing.T) {
	for _, c := range []struct {
		output string
		reason workflows.WaitReason
		want   []workflows.ProbeRecord
	}{
		{"Pending", workflows.WaitReasonTimeout, []workflows.ProbeRecord{{Observed: true, Observation: "Pending"}}},
		{"READY", workflows.WaitReasonMatched, nil},
	} {
		clock := newFakeClock(t0)
		var records []workflows.ProbeRecord
		res, err := pollRun{clock: clock, prober: newProber(clock, text(c.output)), records: &records}.run(t, input(matchesReady, 1, 30))
		require.NoError(t, err)
		assert.Equal(t, c.reason, res.Reason, c.output)
		assert.Equal(t, c.want, records, c.output)
	}
}

// A loop resumed on a host that cannot reach the downstream server until
// the bound answers timeout with the observation its first host recorded,
// as the contract asks of every timeout: the worker decides what to do
// next from it.
func TestPollProbeResumedAnswersTimeoutWithTheRecordedObservation(t *testing.T) {
	clock := newFakeClock(t0.Add(5 * time.Second))
	down := step{err: &UnavailableError{Server: "demo", Err: errors.New("transport closed")}}
	prober := newProber(clock, down)
	record := workflows.ProbeRecord{Observed: true, Observation: "Pending"}
	res, err := pollRun{clock: clock, prober: prober, resumed: &record}.run(t, input(matchesReady, 2, 10))
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, "Pending", res.LastObservation)
	assert.Contains(t, res.ProbeError, "transport closed")
	assert.Equal(t, 2, res.Samples, "the samples at 0 and 2 s, estimated (the one due at 4 s is the resume's, which failed)")
}

// A resumed loop whose record has no quiet window starts one at its first
// sample, even when that sample equals the recorded observation: the
// samples between the record and the break are unknown.
func TestPollProbeResumedWithoutAWindowStartsOneAtItsFirstSample(t *testing.T) {
	clock := newFakeClock(t0.Add(5 * time.Second))
	prober := newProber(clock, text("same"))
	record := workflows.ProbeRecord{Observed: true, Observation: "same"}
	res, err := pollRun{clock: clock, prober: prober, resumed: &record}.run(t,
		input(workflows.Until{Kind: workflows.ConditionQuietForSec, QuietForSec: 4}, 1, 20))
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonSettled, res.Reason)
	assert.Equal(t, 9.0, res.ElapsedSec, "quiet from the resume's first sample (5 s), not from the record")
}

// A loop resumed past its bound (its host was down at the bound) takes the
// sample owed on the bound now, and answers from it.
func TestPollProbeResumedPastTheBoundTakesTheFinalSampleNow(t *testing.T) {
	clock := newFakeClock(t0.Add(12 * time.Second))
	prober := newProber(clock, text("READY"))
	record := workflows.ProbeRecord{Observed: true, Observation: "Pending"}
	res, err := pollRun{clock: clock, prober: prober, resumed: &record}.run(t, input(matchesReady, 2, 10))
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonMatched, res.Reason)
	assert.Equal(t, "READY", res.LastObservation)
	assert.Equal(t, 1, prober.callCount(), "one call, then the wait is over")
	assert.Equal(t, 6, res.Samples, "the 5 before the bound, estimated, and this one")
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
	// The match's deadline (the loop's second one of the sample, after the
	// call's) is reached the moment the match begins: the real match,
	// which would run for seconds, is stopped there.
	clock.onDeadline = func(n int, deadline time.Time) bool { return n == 2 }
	in := input(workflows.Until{Kind: workflows.ConditionMatches, Pattern: pattern}, 1, 3)
	res, err := pollRun{clock: clock, prober: prober}.run(t, in)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason, "the match was stopped, not finished")
	assert.Equal(t, 1, res.Samples)
	assert.Equal(t, 3.0, res.ElapsedSec, "the match is stopped at the bound")
}

type anyTool struct{}

func (anyTool) ResolveProbeTool(name string) (string, error) { return "demo." + name, nil }

// The sample on the bound is judged by the bound plus its allowance, even
// when the loop woke for it a little late, so the wait answers within
// max_wait_sec + 1 s; a loop that wakes past that (resumed after a crash)
// gets the allowance from its wake-up, so its one sample is a real one.
func TestASampleIsJudgedByTheBoundOrTheFinalAllowance(t *testing.T) {
	deadline := t0.Add(10 * time.Second)
	for _, c := range []struct {
		start, want time.Time
	}{
		{t0.Add(3 * time.Second), deadline},
		{deadline, deadline.Add(FinalSampleAllowance)},
		{deadline.Add(300 * time.Millisecond), deadline.Add(FinalSampleAllowance)},
		{deadline.Add(FinalSampleAllowance - 10*time.Millisecond), deadline.Add(FinalSampleAllowance - 10*time.Millisecond + FinalSampleAllowance/4)},
		{deadline.Add(FinalSampleAllowance), deadline.Add(2 * FinalSampleAllowance)},
		{deadline.Add(time.Minute), deadline.Add(time.Minute + FinalSampleAllowance)},
	} {
		assert.Equal(t, c.want, sampleDeadline(deadline, c.start), "a sample started %s after the bound", c.start.Sub(deadline))
	}
	assert.LessOrEqual(t, FinalSampleAllowance+FinalSampleAllowance/4, time.Second, "a final sample is judged within the second past the bound")
}

// stuckRecords stands for an engine that takes no record: each waits for
// its context to end (the fake clock moved to its deadline), and is
// counted.
func stuckRecords(clock *fakeClock, tries *int) func(context.Context, workflows.ProbeRecord) error {
	return func(ctx context.Context, _ workflows.ProbeRecord) error {
		*tries++
		if deadline, ok := ctx.Deadline(); ok {
			clock.AdvanceTo(deadline)
		}
		<-ctx.Done()
		return ctx.Err()
	}
}

// A record the engine does not take holds up neither the samples nor the
// answer: the loop samples on its grid, tries the record again after each
// sample, and answers on the bound (the soak's late timeouts when the
// engine was slow after a restart).
func TestPollProbeARecordTheEngineDoesNotTakeDelaysNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		steps  []step
		reason workflows.WaitReason
		at     float64
		calls  []time.Duration
	}{
		{"a match after it", []step{text("pending"), text("pending"), text("READY")}, workflows.WaitReasonMatched, 4, seconds(0, 2, 4)},
		{"no match", []step{text("pending")}, workflows.WaitReasonTimeout, 10, seconds(0, 2, 4, 6, 8, 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock(t0)
			prober := newProber(clock, tc.steps...)
			tries := 0
			poller := &Poller{Prober: prober, Clock: clock}
			res, err := poller.Run(context.Background(), ProbeRun{WorkflowID: "test-workflow-id",
				Input: input(matchesReady, 2, 10), Record: stuckRecords(clock, &tries)})
			require.NoError(t, err)
			assert.Equal(t, tc.reason, res.Reason)
			assert.Equal(t, tc.at, res.ElapsedSec)
			assert.Equal(t, tc.calls, prober.callTimes(), "on the grid")
			assert.Equal(t, len(tc.calls)-1, tries, "the record is tried after every sample that does not end the wait")
		})
	}
}
