// Package activities holds durawait's side effects: the calls that the
// deterministic workflows delegate to workers.
package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/workflows"
)

// ProbeOutput is the answer of one probe call.
type ProbeOutput struct {
	// Text is the observation: the result's text content joined, or its
	// structured content as JSON when it has no text.
	Text string
	// IsError is the tool result's isError flag.
	IsError bool
}

// Prober calls downstream MCP tools by canonical "<server>.<tool>" name.
type Prober interface {
	CallProbe(ctx context.Context, tool string, args json.RawMessage) (ProbeOutput, error)
}

// UnavailableError reports that a probe's downstream server could not be
// reached. A wait does not end on it: it carries on and samples again.
type UnavailableError struct {
	Server string
	Err    error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("downstream MCP server %q is unavailable: %v", e.Server, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Observer is told, in process, what a running wait observes (see
// workflows.WaitEvent for what each tool's loop sends). It must not block.
type Observer interface {
	Observe(workflowID string, event workflows.WaitEvent)
}

// Poller runs wait_for probe loops.
type Poller struct {
	// Prober makes the probe calls; a *SharedProber lets loops of the same
	// probe share them.
	Prober Prober
	// Observer, when set, is told of every sample.
	Observer Observer
	// Clock is the time the loop runs on: its schedule and its deadlines.
	// SystemClock when nil.
	Clock Clock
	// Allowed, when set, checks a probe ("<server>.<tool>") against the
	// probe policy before each of its calls (Downstream.CheckProbe): the
	// front end checked it too, but the input may have reached the worker
	// some other way, or from a front end configured otherwise. An
	// *UnavailableError (the server has not listed its tools yet) skips
	// the call, as a sample of a server that is down; any other error ends
	// the wait ProbeNotAllowed.
	Allowed func(probe string) error
}

func (p *Poller) clock() Clock {
	if p.Clock == nil {
		return SystemClock{}
	}
	return p.Clock
}

// ProbeRun is one probe loop for a host to run.
type ProbeRun struct {
	// WorkflowID is the wait's (its samples are observed under it, and
	// loops of one caller share calls).
	WorkflowID string
	Input      workflows.PollInput
	// Resumed, for a loop its host resumes (after a restart, or adopted
	// from a lost host), is what the loop had recorded (zero: nothing). A
	// resumed loop's sample count is estimated from the schedule.
	Resumed *workflows.ProbeRecord
	// Record durably records the loop's last observation and quiet window
	// when they change (see workflows.ProbeRecord); it returns once the
	// record is written or ctx ends (the loop gives it until its next
	// sample is due). Nil records nothing.
	Record func(ctx context.Context, r workflows.ProbeRecord) error
	// OnProgress, when set, is told the loop's progress after each
	// attempt (what an operator's look at the wait reads).
	OnProgress func(workflows.PollProgress)
	// Wake, when set, has the loop sample at once when it receives (the
	// wait's wake-up event was posted).
	Wake <-chan struct{}
}

// Run samples the probe until the condition holds or the deadline passes.
// Its errors are the wait's failures (temporal application errors of the
// workflows.ErrType* types), or ctx's error when ctx ended.
func (p *Poller) Run(ctx context.Context, run ProbeRun) (workflows.WaitForResult, error) {
	matcher, err := workflows.NewMatcher(run.Input.Spec, run.Input.Spec.QuietFor())
	if err != nil {
		return workflows.WaitForResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeInvalidSpec, err)
	}

	schedule := run.Input.Schedule()
	clock := p.clock()
	loop := &probeLoop{
		poller:   p,
		clock:    clock,
		run:      run,
		schedule: schedule,
		matcher:  matcher,
		expected: schedule.ExpectedSamples(),
	}
	var resumed workflows.ProbeRecord
	if run.Resumed != nil {
		resumed = *run.Resumed
		loop.progress = workflows.ResumeProgress(schedule, resumed, clock.Now())
	}
	loop.recorder = workflows.NewProbeRecorder(run.Input.Spec, schedule, resumed)
	defer loop.shareSamples()()
	return loop.loop(ctx)
}

type probeLoop struct {
	poller   *Poller
	clock    Clock
	run      ProbeRun
	schedule workflows.PollSchedule
	matcher  *workflows.Matcher
	progress workflows.PollProgress
	// recorder says when the loop records what a resumed loop needs.
	recorder *workflows.ProbeRecorder
	expected int
	// member is the loop's sampling group when its Poller shares calls
	// (see SharedProber).
	member *shareMember
}

func (l *probeLoop) result(reason workflows.WaitReason, cond workflows.ConditionKind) workflows.WaitForResult {
	return l.progress.Result(l.run.Input.Spec, reason, cond, l.clock.Now().Sub(l.schedule.Start))
}

func (l *probeLoop) loop(ctx context.Context) (workflows.WaitForResult, error) {
	tool := l.run.Input.Spec.Probe.Tool
	for {
		at, ok := l.nextAttemptAt()
		if !ok {
			return l.result(workflows.WaitReasonTimeout, ""), nil
		}
		woken, err := l.sleepUntil(ctx, at)
		if err != nil {
			return workflows.WaitForResult{}, err
		}

		// The schedule is fixed-rate: an attempt is recorded on its grid, so
		// a late wake-up does not shift every later sample, and one sample
		// stands for the intervals it missed (no burst of catch-up calls on
		// a worker that is already behind). A sample an event woke is
		// recorded when it is taken: the grid starts again from it.
		start := l.clock.Now()
		if woken {
			l.progress.RecordAttempt(start)
		} else {
			l.progress.RecordAttempt(l.schedule.LatestDue(at, start))
		}
		var out ProbeOutput
		err = l.allowed()
		var unlisted *UnavailableError
		switch {
		case errors.As(err, &unlisted):
		case err != nil:
			return workflows.WaitForResult{}, temporal.NewNonRetryableApplicationError(
				"the worker refuses this probe: "+err.Error(), workflows.ErrTypeProbeNotAllowed, nil)
		default:
			out, err = l.call(ctx, start)
		}
		switch {
		case errors.Is(err, errDeadline):
			// A probe that never answered is hung only if its call had
			// the better part of the bound. A loop begun late (resumed
			// after a crash near its bound, or a call that attached to a
			// wait begun earlier) whose first call met a slow start of
			// the probe's server answers timeout, as any wait whose bound
			// passed with no observation.
			if !l.progress.HasObservation && l.hadMostOfTheBound(start) {
				msg := fmt.Sprintf("probe %s hung: sample %d did not return within max_wait_sec %d",
					tool, l.progress.Samples+1, l.run.Input.Spec.MaxWaitSec)
				return workflows.WaitForResult{}, temporal.NewNonRetryableApplicationError(msg, workflows.ErrTypeProbeHung, nil)
			}
			return l.result(workflows.WaitReasonTimeout, ""), nil
		case err != nil && ctx.Err() != nil:
			return workflows.WaitForResult{}, ctx.Err()
		case err != nil:
			var unavailable *UnavailableError
			if errors.As(err, &unavailable) {
				l.progress.RecordUnavailable(err)
				l.tellProgress()
				if obs := l.poller.Observer; obs != nil {
					obs.Observe(l.run.WorkflowID, workflows.ProbeUnavailable{Message: err.Error()})
				}
				continue
			}
			msg := fmt.Sprintf("sample %d: calling probe %s failed: %v", l.progress.Samples+1, tool, err)
			return workflows.WaitForResult{}, temporal.NewNonRetryableApplicationError(msg, workflows.ErrTypeProbeReturnedError, nil)
		case out.IsError:
			msg := fmt.Sprintf("sample %d: probe %s returned an error: %q", l.progress.Samples+1, tool, out.Text)
			return workflows.WaitForResult{}, temporal.NewNonRetryableApplicationError(msg, workflows.ErrTypeProbeReturnedError, nil)
		case len(out.Text) > workflows.MaxObservationBytes:
			msg := fmt.Sprintf("sample %d: probe %s returned %d bytes (%.1f KiB), over the %d KiB limit",
				l.progress.Samples+1, tool, len(out.Text), float64(len(out.Text))/1024, workflows.MaxObservationBytes/1024)
			return workflows.WaitForResult{}, temporal.NewNonRetryableApplicationError(msg, workflows.ErrTypeProbeOutputTooLarge, nil)
		}

		l.progress.RecordObservation(out.Text, start)
		l.tellProgress()
		if obs := l.poller.Observer; obs != nil {
			obs.Observe(l.run.WorkflowID, workflows.Sample{
				Number: l.progress.Samples, Expected: l.expected, Observation: out.Text,
			})
		}
		reason, cond, done, err := l.judge(ctx, start)
		switch {
		case errors.Is(err, errDeadline):
			// The match outlived the bound: the answer is a timeout, on time.
			return l.result(workflows.WaitReasonTimeout, ""), nil
		case err != nil:
			return workflows.WaitForResult{}, err
		case done:
			return l.result(reason, cond), nil
		}
		if err := l.record(ctx, start); err != nil {
			return workflows.WaitForResult{}, err
		}
	}
}

// wakeMinGap is the least time between a woken sample and the attempt
// before it: posts of a wake-up event, however many, sample the probe at
// most once a second.
const wakeMinGap = time.Second

// sleepUntil waits for the loop's next attempt at at, or less when the
// loop's event wakes it (ProbeRun.Wake): woken says so. A wake-up that
// comes less than wakeMinGap after the last attempt samples at that gap.
func (l *probeLoop) sleepUntil(ctx context.Context, at time.Time) (woken bool, err error) {
	if l.run.Wake == nil {
		return false, l.clock.SleepUntil(ctx, at)
	}
	sleepCtx, cancel := context.WithCancel(ctx)
	took := make(chan bool, 1)
	go func() {
		select {
		case <-l.run.Wake:
			cancel()
			took <- true
		case <-sleepCtx.Done():
			took <- false
		}
	}()
	err = l.clock.SleepUntil(sleepCtx, at)
	cancel()
	// The wake-up taken is never lost: one that came with the timer
	// samples all the same.
	if !<-took {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if gap := l.progress.LastAttemptAt.Add(wakeMinGap); l.progress.Attempts > 0 && gap.Before(at) {
		if err := l.clock.SleepUntil(ctx, gap); err != nil {
			return false, err
		}
	}
	return true, nil
}

// tellProgress tells the loop's progress to whoever asked for it.
func (l *probeLoop) tellProgress() {
	if l.run.OnProgress != nil {
		l.run.OnProgress(l.progress)
	}
}

// record records what a resumed loop needs (see workflows.ProbeRecord)
// when the sample taken at now, which did not end the wait, changed it,
// before the loop goes on. A sample that ends the wait records nothing:
// its answer is the record.
func (l *probeLoop) record(ctx context.Context, now time.Time) error {
	if l.run.Record == nil {
		return nil
	}
	next, write := l.recorder.Next(l.progress, now)
	if !write {
		return nil
	}
	// An engine too slow to take the record holds up neither the next
	// sample nor the wait's answer: the record gives up when the next
	// sample is due (the bound at the latest), and is tried again after
	// it. A loop resumed without it starts its quiet window again.
	recordCtx, cancel := l.clock.WithDeadline(ctx, l.recordBy())
	defer cancel()
	if err := l.run.Record(recordCtx, next); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return nil
	}
	l.recorder.Written(next, now)
	return nil
}

// recordBy is when a record begun now gives up: when the loop's next
// sample is due, the wait's deadline at the latest.
func (l *probeLoop) recordBy() time.Time {
	at, ok := l.schedule.NextAttemptAt(l.progress, l.clock.Now())
	if !ok || at.After(l.schedule.Deadline) {
		return l.schedule.Deadline
	}
	return at
}

// judge runs the matcher on the latest observation, racing it against the
// sample's deadline (see sampleDeadline): a match still running then is
// stopped and reported as errDeadline, so no pattern can stretch the wait
// past its bound.
func (l *probeLoop) judge(ctx context.Context, start time.Time) (workflows.WaitReason, workflows.ConditionKind, bool, error) {
	matchCtx, cancel := l.clock.WithDeadline(ctx, sampleDeadline(l.schedule.Deadline, start))
	defer cancel()
	reason, cond, done, err := l.matcher.JudgeContext(matchCtx, l.progress, start)
	if err != nil {
		if ctx.Err() != nil {
			return "", "", false, ctx.Err()
		}
		return "", "", false, errDeadline
	}
	return reason, cond, done, nil
}

// sampleDeadline is when a sample taken at start must be judged by: the
// wait's deadline; for the sample on the bound itself, FinalSampleAllowance
// after the bound, even when the loop woke for it a little late (a busy
// worker; never less than a quarter of it), so that the wait answers
// within max_wait_sec + 1 s; for a loop
// that wakes past even that (resumed after a crash), FinalSampleAllowance
// after it wakes, so that its one sample is a real one.
func sampleDeadline(deadline, start time.Time) time.Time {
	switch final := deadline.Add(FinalSampleAllowance); {
	case start.Before(deadline):
		return deadline
	case start.Before(final):
		// At least a quarter of the allowance, even for a loop that woke
		// just before its end: still within the second past the bound.
		return maxTime(final, start.Add(FinalSampleAllowance/4))
	}
	return start.Add(FinalSampleAllowance)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

var errDeadline = errors.New("probe call outlived the wait's bound")

// FinalSampleAllowance is how long past the bound the sample taken on the
// bound itself may take to answer before the wait ends without it: under
// the second the contract allows past max_wait_sec, leaving the rest for
// the answer's way to its caller.
const FinalSampleAllowance = 800 * time.Millisecond

// hadMostOfTheBound reports whether a call begun at start had at least
// half of the wait's bound before its deadline.
func (l *probeLoop) hadMostOfTheBound(start time.Time) bool {
	bound := l.schedule.Deadline.Sub(l.schedule.Start)
	return l.schedule.Deadline.Sub(start) >= bound/2
}

// allowed checks the probe against the worker's probe policy
// (Poller.Allowed), if it has one.
func (l *probeLoop) allowed() error {
	if l.poller.Allowed == nil {
		return nil
	}
	return l.poller.Allowed(l.run.Input.Spec.Probe.Tool)
}

// call runs one probe call, raced against the deadline. A call that
// outlives the deadline is abandoned.
func (l *probeLoop) call(ctx context.Context, start time.Time) (ProbeOutput, error) {
	callCtx, cancel := l.clock.WithDeadline(ctx, sampleDeadline(l.schedule.Deadline, start))
	defer cancel()
	type answer struct {
		out ProbeOutput
		err error
	}
	done := make(chan answer, 1)
	// The span's attributes are read here: the goroutine may outlive this
	// call (abandoned on the deadline) while the loop moves on.
	attrs := []attribute.KeyValue{attribute.String("probe_tool", l.run.Input.Spec.Probe.Tool), attribute.Int("attempt", l.progress.Attempts)}
	go func() {
		spanCtx, span := startCallSpan(callCtx, "probe "+l.run.Input.Spec.Probe.Tool, attrs...)
		out, err := l.probeCall(spanCtx)
		endCallSpan(span, err, out.IsError)
		done <- answer{out, err}
	}()
	select {
	case a := <-done:
		if a.err != nil && ctx.Err() == nil && callCtx.Err() != nil {
			return ProbeOutput{}, errDeadline
		}
		return a.out, a.err
	case <-callCtx.Done():
		if ctx.Err() != nil {
			return ProbeOutput{}, ctx.Err()
		}
		return ProbeOutput{}, errDeadline
	}
}
