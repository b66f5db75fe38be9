package activities

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/durawait/durawait/workflows"
)

// DefaultJoinWindow is SharedProber's JoinWindow when it is zero: a tenth
// of the shortest poll_sec (1 s).
const DefaultJoinWindow = 100 * time.Millisecond

// SharedProber lets the probe loops of one worker process share probe
// calls: waits whose probe tool and arguments are identical, whatever their
// conditions, take one call per tick between them, and each loop judges the
// output by its own condition. Every wait is still its own workflow and its
// own activity; only the downstream call is shared. A Poller whose Prober is
// a SharedProber shares; it holds everything in memory (no global state),
// and a new process starts empty.
//
// The rules it keeps:
//
//   - Keying. A call is shared by waits of the same caller scope (the
//     workflow ID without its hash: one principal never receives a call made
//     for another), the same canonical tool name and the same arguments as
//     canonical JSON (keys sorted, numbers exact: key order does not matter).
//   - Freshness. A loop that asks for a sample at time a gets the output of
//     a call that started at or after a - JoinWindow: one in flight, or one
//     that already answered, but never one it took a sample from already
//     (so each of a loop's samples is its own call, also when a loop late on
//     its schedule samples twice in a row). Otherwise it starts a new call.
//     So no wait sees an observation more than JoinWindow (100 ms, a tenth
//     of the shortest poll_sec) older than it would have alone, and
//     detection latency (a change seen within poll_sec, the first sample at
//     once) is unchanged.
//   - Phase. Loops of the same key and poll interval sample together: the
//     first loop of a group samples on its own schedule and its times become
//     the group's grid; a loop that joins the group takes its first sample at
//     once, as always, and moves its next sample earlier, never later, onto
//     the grid (see alignAttempt). After that its fixed-rate schedule stays
//     on the grid. Such a loop takes at most one sample more than
//     PollSchedule.ExpectedSamples (the progress total it reports counts it;
//     a loop resumed on a worker whose grid differs aligns, and may add one,
//     again); PollSchedule and the workflow are unchanged. A quiet_for wait
//     still settles only once its output has been unchanged for quiet_for,
//     within one sample of when it would have alone. A loop that is alone
//     keeps its schedule exactly.
//   - Errors. A failed call is handed to every loop that shared it, and each
//     handles it as its own (an unavailable server is carried on from, any
//     other error ends that wait), exactly as without sharing.
//   - Cancellation and bounds. The call runs on a context of its own (it
//     keeps the values, such as the trace, of the loop that started it), not
//     tied to any one loop: a loop whose context ends (its deadline, or the
//     activity cancelled) returns at once and leaves the call running for the
//     others. The call is cancelled when the last loop sharing it has left,
//     so it is bounded by the largest deadline among them: each loop's
//     context carries the deadline the loop gives a call (the wait's bound,
//     or FinalSampleAllowance after the sample on the bound).
type SharedProber struct {
	// Prober makes the calls.
	Prober Prober
	// Clock says when a call started and when a loop asks; SystemClock when
	// nil. It must be the Poller's clock.
	Clock Clock
	// JoinWindow is how long after a call started another loop may still
	// take its output; DefaultJoinWindow when zero.
	JoinWindow time.Duration

	mu      sync.Mutex
	flights map[string]*flight      // the latest call of each key
	groups  map[string]*sampleGroup // the loops of each key and poll interval
	swept   time.Time               // when finished flights were last dropped
}

// NewSharedProber shares the calls of p between the probe loops of one
// Poller.
func NewSharedProber(p Prober) *SharedProber { return &SharedProber{Prober: p} }

func (s *SharedProber) clock() Clock {
	if s.Clock == nil {
		return SystemClock{}
	}
	return s.Clock
}

func (s *SharedProber) joinWindow() time.Duration {
	if s.JoinWindow <= 0 {
		return DefaultJoinWindow
	}
	return s.JoinWindow
}

// CallProbe implements Prober: it shares the call with every caller of the
// same tool and arguments (no caller scope).
func (s *SharedProber) CallProbe(ctx context.Context, tool string, args json.RawMessage) (ProbeOutput, error) {
	return s.call(ctx, nil, callKey("", tool, args), tool, args)
}

// callKey is the sharing key of a call: scope, tool and canonical args
// (a wait_for spec's arguments already are; what is not a JSON object is
// its own key).
func callKey(scope, tool string, args json.RawMessage) string {
	if canon, err := workflows.CanonicalObject(args); err == nil {
		args = canon
	}
	return scope + "\x00" + tool + "\x00" + string(args)
}

// shareScope is the part of a wait's workflow ID that names its caller:
// "wait_for" for the local user, "wait_for/<tag>" for a principal.
func shareScope(workflowID string) string {
	if i := strings.LastIndexByte(workflowID, '/'); i >= 0 {
		return workflowID[:i]
	}
	return ""
}

// flight is one shared call.
type flight struct {
	started time.Time
	cancel  context.CancelFunc
	done    chan struct{} // closed once out and err are set

	// Guarded by SharedProber.mu.
	waiting  int  // loops waiting for the answer
	finished bool // the call answered
	// Set before done is closed.
	out ProbeOutput
	err error
}

// call returns the output of a call of key started no earlier than
// JoinWindow ago, starting one when there is none. A member (nil for a
// caller outside any loop) never takes the same call twice: each of a
// loop's samples is its own call, as without sharing.
func (s *SharedProber) call(ctx context.Context, m *shareMember, key, tool string, args json.RawMessage) (ProbeOutput, error) {
	f, joined := s.flightFor(ctx, m, key, tool, args)
	if joined {
		trace.SpanFromContext(ctx).SetAttributes(attribute.Bool("probe.shared", true))
	}
	select {
	case <-f.done:
		return f.out, f.err
	case <-ctx.Done():
		select {
		case <-f.done: // answered in the same moment: take it
			return f.out, f.err
		default:
		}
		s.leave(key, f)
		return ProbeOutput{}, ctx.Err()
	}
}

// flightFor finds the call of key to share, or starts one; joined says it
// was already there. The caller counts as waiting on it until it answers or
// the caller leaves.
func (s *SharedProber) flightFor(ctx context.Context, m *shareMember, key, tool string, args json.RawMessage) (f *flight, joined bool) {
	now := s.clock().Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if f = s.flights[key]; f != nil && !f.started.Before(now.Add(-s.joinWindow())) && (m == nil || m.last != f) {
		if !f.finished {
			f.waiting++
		}
		if m != nil {
			m.last = f
		}
		return f, true
	}
	s.sweep(now)
	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f = &flight{started: now, cancel: cancel, done: make(chan struct{}), waiting: 1}
	if s.flights == nil {
		s.flights = map[string]*flight{}
	}
	s.flights[key] = f
	if m != nil {
		m.last = f
	}
	go s.run(callCtx, f, tool, args)
	return f, false
}

// run makes the call of f and hands its answer to every loop sharing it.
func (s *SharedProber) run(ctx context.Context, f *flight, tool string, args json.RawMessage) {
	out, err := s.Prober.CallProbe(ctx, tool, args)
	f.cancel()
	s.mu.Lock()
	f.out, f.err, f.finished = out, err, true
	s.mu.Unlock()
	close(f.done)
}

// leave notes that a loop stopped waiting for f; the last one to leave a
// call in flight cancels it, and no loop joins it after that.
func (s *SharedProber) leave(key string, f *flight) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.finished {
		return
	}
	f.waiting--
	if f.waiting > 0 {
		return
	}
	f.cancel()
	if s.flights[key] == f {
		delete(s.flights, key)
	}
}

// sweep drops, about once a second, the finished calls no loop may join
// any more, so keys no longer probed do not pile up. s.mu is held.
func (s *SharedProber) sweep(now time.Time) {
	if now.Sub(s.swept) < time.Second {
		return
	}
	s.swept = now
	oldest := now.Add(-s.joinWindow())
	for key, f := range s.flights {
		if f.finished && f.started.Before(oldest) {
			delete(s.flights, key)
		}
	}
}

// sampleGroup is the probe loops of one key and poll interval on this
// worker, and the grid they sample on.
type sampleGroup struct {
	loops int
	// anchor is a time on the grid (a sample time of the loop that set it);
	// zero until a loop of the group has planned its second sample.
	anchor time.Time
}

// shareMember is one probe loop's membership: the key its calls are shared
// by and the group it samples with.
type shareMember struct {
	shared   *SharedProber
	key      string
	groupKey string
	// last is the call the loop took its latest sample from; guarded by
	// SharedProber.mu.
	last *flight
}

// enter makes a loop of a wait with this workflow ID, probe and poll
// interval a member of its group; leave ends that.
func (s *SharedProber) enter(workflowID, tool string, args json.RawMessage, poll time.Duration) *shareMember {
	key := callKey(shareScope(workflowID), tool, args)
	m := &shareMember{shared: s, key: key, groupKey: key + "\x00" + poll.String()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.groups == nil {
		s.groups = map[string]*sampleGroup{}
	}
	g := s.groups[m.groupKey]
	if g == nil {
		g = &sampleGroup{}
		s.groups[m.groupKey] = g
	}
	g.loops++
	return m
}

// leave removes the loop from its group; the last one drops the group and
// its grid.
func (m *shareMember) leave() {
	s := m.shared
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.groups[m.groupKey]; g != nil {
		if g.loops--; g.loops <= 0 {
			delete(s.groups, m.groupKey)
		}
	}
}

// alignAttempt moves a sample planned at next (its previous one at last,
// next at most last + poll) onto the group's grid: the first grid time
// after last, when it is before next. The first loop to ask sets the grid
// to its own schedule. A sample is never moved later, so the gap between
// two samples never exceeds poll.
func (m *shareMember) alignAttempt(last, next time.Time, poll time.Duration) time.Time {
	s := m.shared
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[m.groupKey]
	if g == nil || poll <= 0 {
		return next
	}
	if g.anchor.IsZero() {
		g.anchor = next
		return next
	}
	k := last.Sub(g.anchor) / poll // rounds towards zero
	if last.Sub(g.anchor)%poll < 0 {
		k-- // floor
	}
	if grid := g.anchor.Add((k + 1) * poll); grid.Before(next) {
		return grid
	}
	return next
}

// shareSamples makes the loop a member of its sampling group when its
// Poller shares calls; the returned func ends the membership.
func (l *probeLoop) shareSamples() (leave func()) {
	shared, ok := l.poller.Prober.(*SharedProber)
	if !ok {
		return func() {}
	}
	l.member = shared.enter(l.run.WorkflowID, l.run.Input.Spec.Probe.Tool, l.run.Input.Spec.Probe.Args, l.schedule.Poll)
	return l.member.leave
}

// nextAttemptAt is when the loop's next sample is due: the schedule's time,
// moved onto the group's grid when the loop shares (see SharedProber). A
// move counts in the samples the loop expects.
func (l *probeLoop) nextAttemptAt() (time.Time, bool) {
	at, ok := l.schedule.NextAttemptAt(l.progress, l.clock.Now())
	if !ok || l.member == nil || l.progress.Attempts == 0 {
		return at, ok
	}
	aligned := l.member.alignAttempt(l.progress.LastAttemptAt, at, l.schedule.Poll)
	if aligned.Before(at) {
		l.expected = l.progress.Attempts + samplesFrom(aligned, l.schedule)
	}
	return aligned, true
}

// samplesFrom counts the samples of a fixed-rate schedule whose next
// sample is at at: one per poll before the deadline, and one on it.
func samplesFrom(at time.Time, s workflows.PollSchedule) int {
	left := s.Deadline.Sub(at)
	if left <= 0 || s.Poll <= 0 {
		return 1
	}
	n := int(left / s.Poll)
	if left%s.Poll != 0 {
		n++
	}
	return n + 1
}

// probeCall is the loop's probe call: shared when the loop is a member of
// a sampling group, otherwise straight to the Prober.
func (l *probeLoop) probeCall(ctx context.Context) (ProbeOutput, error) {
	probe := l.run.Input.Spec.Probe
	if l.member != nil {
		return l.member.shared.call(ctx, l.member, l.member.key, probe.Tool, probe.Args)
	}
	return l.poller.Prober.CallProbe(ctx, probe.Tool, probe.Args)
}
