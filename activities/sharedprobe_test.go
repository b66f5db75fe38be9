package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/workflows"
)

// heldProber holds every call until the test answers it (answer) or the
// call's context ends.
type heldProber struct {
	mu      sync.Mutex
	calls   []heldCall
	started chan struct{}
}

type heldCall struct {
	ctx    context.Context
	args   string
	answer chan step
}

func newHeldProber() *heldProber { return &heldProber{started: make(chan struct{}, 100)} }

func (p *heldProber) CallProbe(ctx context.Context, _ string, args json.RawMessage) (ProbeOutput, error) {
	c := heldCall{ctx: ctx, args: string(args), answer: make(chan step, 1)}
	p.mu.Lock()
	p.calls = append(p.calls, c)
	p.mu.Unlock()
	p.started <- struct{}{}
	select {
	case s := <-c.answer:
		return s.out, s.err
	case <-ctx.Done():
		return ProbeOutput{}, ctx.Err()
	}
}

func (p *heldProber) call(i int) heldCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[i]
}

func (p *heldProber) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

// answer is one CallProbe's return.
type answer struct {
	out ProbeOutput
	err error
}

// ask calls s in the background; the answer arrives on the channel.
func ask(ctx context.Context, s *SharedProber, key, args string) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		out, err := s.call(ctx, nil, key, "demo.read_file", json.RawMessage(args))
		ch <- answer{out, err}
	}()
	return ch
}

// waitingOn is how many callers wait on key's call in flight.
func waitingOn(s *SharedProber, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.flights[key]; f != nil && !f.finished {
		return f.waiting
	}
	return 0
}

func receive(t *testing.T, ch <-chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		return answer{}
	}
}

func TestSharedProberLoopsAskingTogetherShareOneCall(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newHeldProber()
	s := &SharedProber{Prober: prober, Clock: clock}
	key := callKey("wait_for", "demo.read_file", json.RawMessage(`{"path":"pods"}`))

	a := ask(context.Background(), s, key, `{"path":"pods"}`)
	<-prober.started
	clock.Advance(DefaultJoinWindow) // still within the window
	b := ask(context.Background(), s, key, `{"path":"pods"}`)
	require.Eventually(t, func() bool { return waitingOn(s, key) == 2 }, 5*time.Second, time.Millisecond)
	prober.call(0).answer <- text("web-1 READY")

	assert.Equal(t, "web-1 READY", receive(t, a).out.Text)
	assert.Equal(t, "web-1 READY", receive(t, b).out.Text)
	assert.Equal(t, 1, prober.count(), "one downstream call for both")
}

func TestSharedProberReusesAnAnswerOnlyWithinTheJoinWindow(t *testing.T) {
	clock := newFakeClock(t0)
	prober := &countingProber{}
	s := &SharedProber{Prober: prober, Clock: clock, JoinWindow: 50 * time.Millisecond}
	key := callKey("", "demo.counter", json.RawMessage(`{}`))
	get := func() string {
		out, err := s.call(context.Background(), nil, key, "demo.counter", json.RawMessage(`{}`))
		require.NoError(t, err)
		return out.Text
	}

	assert.Equal(t, "count=1", get())
	clock.Advance(50 * time.Millisecond)
	assert.Equal(t, "count=1", get(), "a call that started 50 ms ago is fresh enough")
	clock.Advance(time.Millisecond)
	assert.Equal(t, "count=2", get(), "51 ms is too old: a new call")
}

// countingProber answers "count=N" at once, N counting its calls, and
// records each call's arguments.
type countingProber struct {
	mu   sync.Mutex
	args []string
}

func (p *countingProber) CallProbe(_ context.Context, tool string, args json.RawMessage) (ProbeOutput, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.args = append(p.args, tool+" "+string(args))
	return ProbeOutput{Text: fmt.Sprintf("count=%d", len(p.args))}, nil
}

func (p *countingProber) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.args)
}

func TestSharedProberKeysByScopeToolAndCanonicalArgs(t *testing.T) {
	clock := newFakeClock(t0)
	prober := &countingProber{}
	s := &SharedProber{Prober: prober, Clock: clock}
	call := func(workflowID, tool, args string) string {
		m := s.enter(workflowID, tool, json.RawMessage(args), 2*time.Second)
		defer m.leave()
		out, err := s.call(context.Background(), m, m.key, tool, json.RawMessage(args))
		require.NoError(t, err)
		return out.Text
	}

	first := call("wait_for/aaa", "demo.read_file", `{"path":"pods","ns":"web","opts":{"b":1,"a":[1,2.50]}}`)
	assert.Equal(t, first, call("wait_for/bbb", "demo.read_file", ` {"opts":{"a":[1,2.50],"b":1},"ns":"web","path":"pods"}`),
		"same tool and arguments in another key order: shared")
	assert.NotEqual(t, first, call("wait_for/ccc", "demo.read_file", `{"path":"pods","ns":"web","opts":{"b":1,"a":[1,2.5]}}`),
		"2.5 is not 2.50: exact numbers")
	assert.NotEqual(t, first, call("wait_for/ddd", "demo.read_file", `{"path":"jobs","ns":"web","opts":{"b":1,"a":[1,2.50]}}`),
		"other arguments")
	assert.NotEqual(t, first, call("wait_for/eee", "other.read_file", `{"path":"pods","ns":"web","opts":{"b":1,"a":[1,2.50]}}`),
		"another server's tool")
	assert.NotEqual(t, first, call("wait_for/p0123/fff", "demo.read_file", `{"path":"pods","ns":"web","opts":{"b":1,"a":[1,2.50]}}`),
		"another caller's scope")
	assert.Equal(t, 5, prober.count())
}

func TestSharedProberNeverGivesALoopTheSameCallTwice(t *testing.T) {
	prober := &countingProber{}
	s := &SharedProber{Prober: prober, Clock: newFakeClock(t0)}
	late := s.enter("wait_for/a", "demo.counter", json.RawMessage(`{}`), time.Second)
	defer late.leave()
	other := s.enter("wait_for/b", "demo.counter", json.RawMessage(`{}`), time.Second)
	defer other.leave()
	sample := func(m *shareMember) string {
		out, err := s.call(context.Background(), m, m.key, "demo.counter", json.RawMessage(`{}`))
		require.NoError(t, err)
		return out.Text
	}

	assert.Equal(t, "count=1", sample(late))
	assert.Equal(t, "count=1", sample(other), "another loop shares it")
	assert.Equal(t, "count=2", sample(late), "a loop catching up on its schedule samples anew at once")
	assert.Equal(t, "count=2", sample(other))
	assert.Equal(t, 2, prober.count())
}

func TestSharedProberHandsAFailedCallToEveryLoop(t *testing.T) {
	prober := newHeldProber()
	s := &SharedProber{Prober: prober, Clock: newFakeClock(t0)}
	key := callKey("", "demo.read_file", json.RawMessage(`{}`))
	a := ask(context.Background(), s, key, `{}`)
	<-prober.started
	b := ask(context.Background(), s, key, `{}`)
	require.Eventually(t, func() bool { return waitingOn(s, key) == 2 }, 5*time.Second, time.Millisecond)
	down := &UnavailableError{Server: "demo", Err: errors.New("connection reset")}
	prober.call(0).answer <- step{err: down}

	for _, ch := range []<-chan answer{a, b} {
		var unavailable *UnavailableError
		assert.ErrorAs(t, receive(t, ch).err, &unavailable)
	}
	assert.Equal(t, 1, prober.count())
}

func TestSharedProberALoopThatLeavesLeavesTheCallToTheOthers(t *testing.T) {
	prober := newHeldProber()
	s := &SharedProber{Prober: prober, Clock: newFakeClock(t0)}
	key := callKey("", "demo.read_file", json.RawMessage(`{}`))
	type traceKey struct{}
	leaderCtx, leave := context.WithTimeout(context.WithValue(context.Background(), traceKey{}, "leader's trace"), time.Hour)
	a := ask(leaderCtx, s, key, `{}`)
	<-prober.started
	b := ask(context.Background(), s, key, `{}`)
	require.Eventually(t, func() bool { return waitingOn(s, key) == 2 }, 5*time.Second, time.Millisecond)

	call := prober.call(0)
	_, hasDeadline := call.ctx.Deadline()
	assert.False(t, hasDeadline, "the call is not bound to the loop that started it")
	assert.Equal(t, "leader's trace", call.ctx.Value(traceKey{}), "it keeps that loop's values")

	leave()
	assert.ErrorIs(t, receive(t, a).err, context.Canceled, "the loop that left returns at once")
	assert.NoError(t, call.ctx.Err(), "the call runs on for the other")
	call.answer <- text("READY")
	assert.Equal(t, "READY", receive(t, b).out.Text)
}

func TestSharedProberCancelsACallEveryLoopLeft(t *testing.T) {
	prober := newHeldProber()
	s := &SharedProber{Prober: prober, Clock: newFakeClock(t0)}
	key := callKey("", "demo.read_file", json.RawMessage(`{}`))
	ctx, cancel := context.WithCancel(context.Background())
	a := ask(ctx, s, key, `{}`)
	<-prober.started
	b := ask(ctx, s, key, `{}`)
	require.Eventually(t, func() bool { return waitingOn(s, key) == 2 }, 5*time.Second, time.Millisecond)
	cancel()
	receive(t, a)
	receive(t, b)
	select {
	case <-prober.call(0).ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the call outlived every loop that waited for it")
	}

	c := ask(context.Background(), s, key, `{}`)
	<-prober.started
	assert.Equal(t, 2, prober.count(), "a call nobody waits for any more is not joined")
	prober.call(1).answer <- text("fresh")
	assert.Equal(t, "fresh", receive(t, c).out.Text)
}

func TestSharedProberAlignsALoopOntoItsGroupsGrid(t *testing.T) {
	s := &SharedProber{Prober: &countingProber{}}
	poll := 2 * time.Second
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	first := s.enter("wait_for/a", "demo.read_file", json.RawMessage(`{}`), poll)
	second := s.enter("wait_for/b", "demo.read_file", json.RawMessage(`{}`), poll)
	other := s.enter("wait_for/c", "demo.read_file", json.RawMessage(`{}`), 3*time.Second)

	assert.Equal(t, at(2), first.alignAttempt(at(0), at(2), poll), "the first to plan sets the grid: 0, 2, 4, ...")
	assert.Equal(t, at(6), second.alignAttempt(at(5.3), at(7.3), poll), "a later loop moves onto it, earlier")
	assert.Equal(t, at(8), second.alignAttempt(at(6), at(8), poll), "and stays there")
	assert.Equal(t, at(5.8), second.alignAttempt(at(5.3), at(5.8), poll), "never later than planned (a trimmed last interval)")
	assert.Equal(t, at(0), second.alignAttempt(at(-1.5), at(0.5), poll), "times before the grid's anchor too")
	assert.Equal(t, at(4.2), other.alignAttempt(at(1.2), at(4.2), 3*time.Second), "another poll interval is another group")

	first.leave()
	second.leave()
	third := s.enter("wait_for/d", "demo.read_file", json.RawMessage(`{}`), poll)
	assert.Equal(t, at(11.1), third.alignAttempt(at(9.1), at(11.1), poll), "once a group is empty its grid goes")
	third.leave()
	other.leave()
	assert.Empty(t, s.groups)
}

func TestPollProbeAloneKeepsItsSchedule(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, text("Pending"))
	shared := &SharedProber{Prober: prober, Clock: clock}
	res, err := runPoll(t, clock, shared, input(matchesReady, 2, 9), nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonTimeout, res.Reason)
	assert.Equal(t, seconds(0, 2, 4, 6, 8, 9), prober.callTimes())
	assert.Empty(t, shared.groups, "the loop left its group")
}

func TestPollProbeJoinsTheGridOfItsGroup(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, text("Pending"))
	shared := &SharedProber{Prober: prober, Clock: clock}
	in := input(matchesReady, 2, 9)
	// Another wait of the same probe samples at 0.5, 2.5, 4.5, ...
	peer := shared.enter("peer-workflow-id" /* the test workflow's scope: "" */, in.Spec.Probe.Tool, in.Spec.Probe.Args, 2*time.Second)
	defer peer.leave()
	peer.alignAttempt(t0.Add(-1500*time.Millisecond), t0.Add(500*time.Millisecond), 2*time.Second)

	obs := &recordingObserver{}
	res, err := runPoll(t, clock, shared, in, obs)
	require.NoError(t, err)
	assert.Equal(t, seconds(0, 0.5, 2.5, 4.5, 6.5, 8.5, 9), prober.callTimes(),
		"the first sample at once, then on the group's grid, the last on the bound")
	assert.Equal(t, 7, res.Samples, "one more than alone")
	assert.Equal(t, 6, in.Schedule().ExpectedSamples())
	require.Len(t, obs.samples, 7)
	assert.Equal(t, 6, obs.samples[0].Expected)
	for _, s := range obs.samples[1:] {
		assert.Equal(t, 7, s.Expected, "the progress total counts the moved sample")
	}
}

func TestPollProbeSharesAQuietWindowWithinOneSample(t *testing.T) {
	clock := newFakeClock(t0)
	prober := newProber(clock, text("a"), text("b"))
	shared := &SharedProber{Prober: prober, Clock: clock}
	in := input(workflows.Until{Kind: workflows.ConditionQuietForSec, QuietForSec: 4}, 2, 30)
	peer := shared.enter("peer-workflow-id" /* the test workflow's scope: "" */, in.Spec.Probe.Tool, in.Spec.Probe.Args, 2*time.Second)
	defer peer.leave()
	peer.alignAttempt(t0.Add(-1500*time.Millisecond), t0.Add(500*time.Millisecond), 2*time.Second)

	res, err := runPoll(t, clock, shared, in, nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitReasonSettled, res.Reason)
	// "b" first seen at 0.5 s; quiet for 4 s at 4.5 s (alone: first seen at
	// 2 s, settled at 6 s).
	assert.Equal(t, seconds(0, 0.5, 2.5, 4.5), prober.callTimes())
}
