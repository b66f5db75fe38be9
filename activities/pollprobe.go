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
	"go.temporal.io/sdk/activity"
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
// workflows.WaitEvent for what each tool's activity sends). It must not
// block.
type Observer interface {
	Observe(workflowID string, event workflows.WaitEvent)
}

// Poller runs wait_for probe loops.
type Poller struct {
	// Prober makes the probe calls; a *SharedProber lets loops of the same
	// probe share them.
	Prober Prober
	// Observer, when set, is told of every sample and of the result.
	Observer Observer
	// Judge, when set, replaces (*workflows.Matcher).JudgeContext; tests use
	// it to stand in for a slow match.
	Judge JudgeFunc
	// Clock is the time the loop runs on: its schedule, its deadlines and its
	// heartbeats. SystemClock when nil.
	Clock Clock
}

func (p *Poller) clock() Clock {
	if p.Clock == nil {
		return SystemClock{}
	}
	return p.Clock
}

// JudgeFunc decides whether a wait is over after the latest observation;
// it must return ctx's error soon after ctx ends.
type JudgeFunc func(ctx context.Context, m *workflows.Matcher, p workflows.PollProgress, now time.Time) (workflows.WaitReason, workflows.ConditionKind, bool, error)

func (p *Poller) judge(ctx context.Context, m *workflows.Matcher, progress workflows.PollProgress, now time.Time) (workflows.WaitReason, workflows.ConditionKind, bool, error) {
	if p.Judge != nil {
		return p.Judge(ctx, m, progress, now)
	}
	return m.JudgeContext(ctx, progress, now)
}

// PollProbe samples the probe until the condition holds or the deadline
// passes. It resumes from its last heartbeat when Temporal retries it.
func (p *Poller) PollProbe(ctx context.Context, in workflows.PollInput) (workflows.WaitForResult, error) {
	matcher, err := workflows.NewMatcher(in.Spec, in.Spec.QuietFor())
	if err != nil {
		return workflows.WaitForResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeInvalidSpec, err)
	}
	var progress workflows.PollProgress
	if activity.HasHeartbeatDetails(ctx) {
		var checkpoint workflows.PollCheckpoint // the previous release's PollProgress decodes too
		if err := activity.GetHeartbeatDetails(ctx, &checkpoint); err != nil {
			return workflows.WaitForResult{}, fmt.Errorf("resume probe loop from heartbeat: %w", err)
		}
		progress = checkpoint.Progress()
	}
	info := activity.GetInfo(ctx)
	schedule := in.Schedule()
	clock := p.clock()
	loop := &probeLoop{
		poller:    p,
		clock:     clock,
		in:        in,
		schedule:  schedule,
		matcher:   matcher,
		progress:  progress,
		wfID:      info.WorkflowExecution.ID,
		expected:  schedule.ExpectedSamples(),
		beatEvery: heartbeatInterval(info.HeartbeatTimeout),
	}
	loop.nextBeat = clock.Now().Add(loop.beatEvery)
	defer loop.shareSamples()()
	return loop.run(ctx)
}

// heartbeatInterval sends heartbeats well inside the timeout; the SDK
// throttles them further.
func heartbeatInterval(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		return time.Second
	}
	return max(timeout/3, 50*time.Millisecond)
}

type probeLoop struct {
	poller   *Poller
	clock    Clock
	in       workflows.PollInput
	schedule workflows.PollSchedule
	matcher  *workflows.Matcher
	progress workflows.PollProgress
	wfID     string
	expected int
	// member is the loop's sampling group when its Poller shares calls
	// (see SharedProber).
	member *shareMember
	// beatEvery paces the heartbeats; nextBeat is when the next one is due.
	beatEvery time.Duration
	nextBeat  time.Time
}

// heartbeat records the progress (bounded: see workflows.PollCheckpoint)
// and puts the next heartbeat a beatEvery
// from now.
func (l *probeLoop) heartbeat(ctx context.Context) {
	activity.RecordHeartbeat(ctx, l.progress.Checkpoint())
	l.nextBeat = l.clock.Now().Add(l.beatEvery)
}

// beatDue returns a copy of ctx that ends when the next heartbeat is due.
func (l *probeLoop) beatDue(ctx context.Context) (context.Context, context.CancelFunc) {
	return l.clock.WithDeadline(ctx, l.nextBeat)
}

func (l *probeLoop) result(reason workflows.WaitReason, cond workflows.ConditionKind) workflows.WaitForResult {
	res := l.progress.Result(l.in.Spec, reason, cond, l.clock.Now().Sub(l.schedule.Start))
	if obs := l.poller.Observer; obs != nil {
		obs.Observe(l.wfID, res)
	}
	return res
}

func (l *probeLoop) run(ctx context.Context) (workflows.WaitForResult, error) {
	tool := l.in.Spec.Probe.Tool
	for {
		at, ok := l.nextAttemptAt()
		if !ok {
			l.heartbeat(ctx)
			return l.result(workflows.WaitReasonTimeout, ""), nil
		}
		if err := l.sleepUntil(ctx, at); err != nil {
			return workflows.WaitForResult{}, err
		}

		// The schedule is fixed-rate: an attempt is recorded on its grid, so
		// a late wake-up does not shift every later sample, and one sample
		// stands for the intervals it missed (no burst of catch-up calls on
		// a worker that is already behind).
		start := l.clock.Now()
		l.progress.RecordAttempt(l.schedule.LatestDue(at, start))
		out, err := l.call(ctx, start)
		switch {
		case errors.Is(err, errDeadline):
			l.heartbeat(ctx)
			if !l.progress.HasObservation {
				msg := fmt.Sprintf("probe %s hung: sample %d did not return within max_wait_sec %d",
					tool, l.progress.Samples+1, l.in.Spec.MaxWaitSec)
				return workflows.WaitForResult{}, temporal.NewNonRetryableApplicationError(msg, workflows.ErrTypeProbeHung, nil)
			}
			return l.result(workflows.WaitReasonTimeout, ""), nil
		case err != nil && ctx.Err() != nil:
			return workflows.WaitForResult{}, ctx.Err()
		case err != nil:
			var unavailable *UnavailableError
			if errors.As(err, &unavailable) {
				l.progress.RecordUnavailable(err)
				l.heartbeat(ctx)
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
		l.heartbeat(ctx)
		if obs := l.poller.Observer; obs != nil {
			obs.Observe(l.wfID, workflows.Sample{
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
	}
}

// judge runs the matcher on the latest observation off the heartbeat path:
// heartbeats keep flowing while it runs, and a match still running at the
// sample's deadline (see sampleDeadline) is stopped and reported as
// errDeadline, so no pattern can stretch the wait past its bound.
func (l *probeLoop) judge(ctx context.Context, start time.Time) (workflows.WaitReason, workflows.ConditionKind, bool, error) {
	matchCtx, cancel := l.clock.WithDeadline(ctx, sampleDeadline(l.schedule.Deadline, start))
	defer cancel()
	type verdict struct {
		reason workflows.WaitReason
		cond   workflows.ConditionKind
		done   bool
		err    error
	}
	answer := make(chan verdict, 1)
	progress := l.progress
	go func() {
		var v verdict
		v.reason, v.cond, v.done, v.err = l.poller.judge(matchCtx, l.matcher, progress, start)
		answer <- v
	}()
	for {
		beat, stopBeat := l.beatDue(ctx)
		select {
		case v := <-answer:
			stopBeat()
			if v.err != nil {
				if ctx.Err() != nil {
					return "", "", false, ctx.Err()
				}
				return "", "", false, errDeadline
			}
			return v.reason, v.cond, v.done, nil
		case <-beat.Done():
			stopBeat()
			if ctx.Err() != nil {
				return "", "", false, ctx.Err()
			}
			l.heartbeat(ctx)
		case <-matchCtx.Done():
			stopBeat()
			if ctx.Err() != nil {
				return "", "", false, ctx.Err()
			}
			return "", "", false, errDeadline
		}
	}
}

// sampleDeadline is when a sample taken at start must be judged by: the
// wait's deadline, or FinalSampleAllowance after the sample taken on the
// bound itself.
func sampleDeadline(deadline, start time.Time) time.Time {
	if !start.Before(deadline) {
		return start.Add(FinalSampleAllowance)
	}
	return deadline
}

// sleepUntil waits for at, heartbeating when beats are due, or returns when
// ctx ends.
func (l *probeLoop) sleepUntil(ctx context.Context, at time.Time) error {
	for l.clock.Now().Before(at) {
		wake := at
		if l.nextBeat.Before(wake) {
			wake = l.nextBeat
		}
		if err := l.clock.SleepUntil(ctx, wake); err != nil {
			return err
		}
		if !l.clock.Now().Before(l.nextBeat) {
			l.heartbeat(ctx)
		}
	}
	return nil
}

var errDeadline = errors.New("probe call outlived the wait's bound")

// FinalSampleAllowance is how long the sample taken on the bound itself may
// take to answer before the wait ends without it.
const FinalSampleAllowance = time.Second

// call runs one probe call, raced against the deadline, heartbeating while
// it is in flight. A call that outlives the deadline is abandoned.
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
	attrs := []attribute.KeyValue{attribute.String("probe_tool", l.in.Spec.Probe.Tool), attribute.Int("attempt", l.progress.Attempts)}
	go func() {
		spanCtx, span := startCallSpan(callCtx, "probe "+l.in.Spec.Probe.Tool, attrs...)
		out, err := l.probeCall(spanCtx)
		endCallSpan(span, err, out.IsError)
		done <- answer{out, err}
	}()
	for {
		beat, stopBeat := l.beatDue(ctx)
		select {
		case a := <-done:
			stopBeat()
			if a.err != nil && ctx.Err() == nil && callCtx.Err() != nil {
				return ProbeOutput{}, errDeadline
			}
			return a.out, a.err
		case <-beat.Done():
			stopBeat()
			if ctx.Err() != nil {
				return ProbeOutput{}, ctx.Err()
			}
			l.heartbeat(ctx)
		case <-callCtx.Done():
			stopBeat()
			if ctx.Err() != nil {
				return ProbeOutput{}, ctx.Err()
			}
			return ProbeOutput{}, errDeadline
		}
	}
}
