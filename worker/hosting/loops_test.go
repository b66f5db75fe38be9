package hosting

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/workflows"
)

// answered is one answer a loop gave its activity.
type answered struct {
	ref    loopRef
	result any
	err    error
}

// fakeCompleter records the answers; fail makes the next answers fail.
type fakeCompleter struct {
	mu      sync.Mutex
	answers []answered
	fail    []error
	got     chan struct{}
}

func newFakeCompleter() *fakeCompleter { return &fakeCompleter{got: make(chan struct{}, 100)} }

func (f *fakeCompleter) CompleteActivityByID(_ context.Context, _, workflowID, runID, activityID string, result any, err error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.fail) > 0 {
		e := f.fail[0]
		f.fail = f.fail[1:]
		return e
	}
	f.answers = append(f.answers, answered{ref: loopRef{WorkflowID: workflowID, RunID: runID, ActivityID: activityID}, result: result, err: err})
	f.got <- struct{}{}
	return nil
}

func (f *fakeCompleter) all() []answered {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]answered(nil), f.answers...)
}

// recordingObserver keeps the events it is told, in order.
type recordingObserver struct {
	mu     sync.Mutex
	events []workflows.WaitEvent
}

func (o *recordingObserver) Observe(_ string, e workflows.WaitEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, e)
}

func (o *recordingObserver) all() []workflows.WaitEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]workflows.WaitEvent(nil), o.events...)
}

func newTestLoops(c completer, o activities.Observer) *loops {
	return newLoops("default", c, o, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

var ref1 = loopRef{WorkflowID: "wait_for/1", RunID: "r1", ActivityID: "5", Host: "h1"}

// awaitAnswers waits for n answers.
func awaitAnswers(t *testing.T, f *fakeCompleter, n int) []answered {
	t.Helper()
	for range n {
		select {
		case <-f.got:
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer; got %v", f.all())
		}
	}
	return f.all()
}

// A loop's end is told to the in-process feed (a call answers at once)
// and answered to its activity by ID.
func TestALoopsEndIsObservedAndAnswered(t *testing.T) {
	c, o := newFakeCompleter(), &recordingObserver{}
	l := newTestLoops(c, o)
	result := workflows.WaitForResult{Reason: workflows.WaitReasonMatched, LastObservation: "READY"}
	require.True(t, l.start(context.Background(), ref1, loopStart{}, func(context.Context) (any, error) { return result, nil }))
	got := awaitAnswers(t, c, 1)
	assert.Equal(t, []answered{{ref: loopRef{WorkflowID: "wait_for/1", RunID: "r1", ActivityID: "5"}, result: result}}, got)
	l.wg.Wait()
	assert.Equal(t, []workflows.WaitEvent{result}, o.all())
	assert.False(t, l.has(ref1.key()), "an ended loop is gone")
}

// An answer Temporal cannot take yet (the engine restarts) is given again
// until it can; one whose activity is gone is dropped, and not observed.
func TestAnAnswerIsRetriedUntilTakenAndDroppedWhenGone(t *testing.T) {
	c, o := newFakeCompleter(), &recordingObserver{}
	c.fail = []error{serviceerror.NewUnavailable("engine restarting"), serviceerror.NewUnavailable("engine restarting")}
	l := newTestLoops(c, o)
	l.start(context.Background(), ref1, loopStart{}, func(context.Context) (any, error) {
		return workflows.WaitForResult{Reason: workflows.WaitReasonTimeout}, nil
	})
	awaitAnswers(t, c, 1)
	l.wg.Wait()
	assert.Len(t, o.all(), 1)

	c2 := newFakeCompleter()
	c2.fail = []error{serviceerror.NewNotFound("workflow execution already completed")}
	l2 := newTestLoops(c2, nil)
	l2.start(context.Background(), ref1, loopStart{}, func(context.Context) (any, error) {
		return workflows.WaitForResult{Reason: workflows.WaitReasonTimeout}, nil
	})
	l2.wg.Wait()
	assert.Empty(t, c2.all(), "given up once Temporal says the activity is gone")
}

// A loop's failure is told to the feed as WaitFailed, with its message,
// and answered as the activity's failure.
func TestALoopsFailureIsToldAndAnswered(t *testing.T) {
	c, o := newFakeCompleter(), &recordingObserver{}
	l := newTestLoops(c, o)
	failure := temporal.NewNonRetryableApplicationError("sample 2: probe demo.read_file returned an error", workflows.ErrTypeProbeReturnedError, nil)
	l.start(context.Background(), ref1, loopStart{}, func(context.Context) (any, error) { return workflows.WaitForResult{}, failure })
	got := awaitAnswers(t, c, 1)
	assert.Equal(t, failure, got[0].err)
	l.wg.Wait()
	assert.Equal(t, []workflows.WaitEvent{workflows.WaitFailed{Message: "sample 2: probe demo.read_file returned an error"}}, o.all())
}

// A stop from the loop's workflow ends it and answers cancelled (with the
// loop's own cancel details when it gives them); a stop that comes before
// the loop (a resume racing it) is remembered, so the loop starts stopped.
func TestAStoppedLoopAnswersCancelled(t *testing.T) {
	c := newFakeCompleter()
	l := newTestLoops(c, nil)
	running := make(chan struct{})
	l.start(context.Background(), ref1, loopStart{}, func(ctx context.Context) (any, error) {
		close(running)
		<-ctx.Done()
		assert.ErrorIs(t, context.Cause(ctx), activities.ErrLoopStopped)
		return nil, ctx.Err()
	})
	<-running
	l.stop(ref1.key())
	got := awaitAnswers(t, c, 1)
	var canceled *temporal.CanceledError
	require.ErrorAs(t, got[0].err, &canceled)

	ref2 := loopRef{WorkflowID: "agent/2", RunID: "r2", ActivityID: "9", Host: "h1"}
	l.stop(ref2.key()) // before its loop
	l.start(context.Background(), ref2, loopStart{}, func(ctx context.Context) (any, error) {
		require.Error(t, ctx.Err(), "it starts stopped")
		return nil, temporal.NewCanceledError(workflows.AgentFinal{Output: "partial"})
	})
	got = awaitAnswers(t, c, 1)
	require.ErrorAs(t, got[1].err, &canceled)
	var partial workflows.AgentFinal
	require.NoError(t, canceled.Details(&partial))
	assert.Equal(t, "partial", partial.Output, "the loop's own cancel details are kept")
}

// Dropped loops (the host released, the worker stopping) answer nothing:
// the host's next holder resumes them.
func TestADroppedLoopAnswersNothing(t *testing.T) {
	c := newFakeCompleter()
	l := newTestLoops(c, nil)
	other := loopRef{WorkflowID: "wait_for/2", RunID: "r2", ActivityID: "5", Host: "h2"}
	for _, ref := range []loopRef{ref1, other} {
		l.start(context.Background(), ref, loopStart{}, func(ctx context.Context) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	}
	l.drop("h1", errReleased)
	assert.False(t, l.has(ref1.key()))
	assert.True(t, l.has(other.key()), "another host's loop runs on")
	assert.Equal(t, []loopRef{other}, l.of("h2"))
	l.drop("", errStopping)
	assert.Empty(t, c.all())
}

// One loop per workflow run: a second start (a resume racing the
// activity's delivery) is refused.
func TestOneLoopPerRun(t *testing.T) {
	l := newTestLoops(newFakeCompleter(), nil)
	block := func(ctx context.Context) (any, error) { <-ctx.Done(); return nil, ctx.Err() }
	require.True(t, l.start(context.Background(), ref1, loopStart{}, block))
	assert.False(t, l.start(context.Background(), ref1, loopStart{}, block))
	l.drop("", errStopping)
}

// The loop of a run's next activity (an agent's answer run, scheduled the
// moment the loop before it was answered) waits for that loop to leave,
// and starts then.
func TestANextActivitysLoopWaitsForThePreviousToLeave(t *testing.T) {
	l := newTestLoops(newFakeCompleter(), nil)
	leave := make(chan struct{})
	require.True(t, l.start(context.Background(), ref1, loopStart{}, func(context.Context) (any, error) {
		<-leave
		return nil, nil
	}))
	next := ref1
	next.ActivityID = "9"
	started := make(chan bool)
	go func() {
		started <- l.start(context.Background(), next, loopStart{}, func(ctx context.Context) (any, error) { <-ctx.Done(); return nil, ctx.Err() })
	}()
	select {
	case <-started:
		t.Fatal("started while the previous loop was there")
	default:
	}
	close(leave)
	assert.True(t, <-started, "started once the previous loop left")
	l.drop("", errStopping)
}

func TestGoneTellsARefusalFromAPassingFailure(t *testing.T) {
	assert.True(t, gone(serviceerror.NewNotFound("x")))
	assert.True(t, gone(serviceerror.NewFailedPrecondition("x")))
	assert.False(t, gone(serviceerror.NewUnavailable("x")))
	assert.False(t, gone(errors.New("connection refused")))
}

// A Temporal that cannot be reached does not hold up a drop (a stop of
// durawait): a loop that ended and keeps failing to answer is abandoned
// after the grace, its answer left to the host's next holder.
func TestADropDoesNotWaitForAnAnswerTemporalRefuses(t *testing.T) {
	c := newFakeCompleter()
	unavailable := serviceerror.NewUnavailable("the engine is down")
	for range 1000 {
		c.fail = append(c.fail, unavailable)
	}
	l := newTestLoops(c, nil)
	ended := make(chan struct{})
	require.True(t, l.start(context.Background(), ref1, loopStart{}, func(context.Context) (any, error) {
		close(ended)
		return workflows.WaitForResult{Reason: workflows.WaitReasonMatched}, nil
	}))
	<-ended
	dropped := make(chan struct{})
	go func() {
		l.drop("", errors.New("stopping"))
		close(dropped)
	}()
	select {
	case <-dropped:
	case <-time.After(time.Minute): // a hang detector, far past the 2 s grace
		t.Fatal("the drop waited for an answer Temporal kept refusing")
	}
	assert.Empty(t, c.all(), "no answer was recorded")
	assert.False(t, l.has(ref1.key()))
}

// A loop's end that Temporal refused because it had already timed out the
// loop's activity (the host and the engine stalled together) is kept, and
// handed to the wait that asks for it: the very answer the in-process feed
// told. A loop still running when asked is waited for.
func TestAnEndTemporalRefusedIsCollectedByItsWait(t *testing.T) {
	c, o := newFakeCompleter(), &recordingObserver{}
	c.fail = []error{serviceerror.NewNotFound("activity not found")}
	l := newTestLoops(c, o)
	result := workflows.WaitForResult{Reason: workflows.WaitReasonTimeout, LastObservation: "pending", Samples: 2}
	release := make(chan struct{})
	l.start(context.Background(), ref1, loopStart{}, func(context.Context) (any, error) {
		<-release
		return result, nil
	})
	collected := make(chan unrecordedEnd, 1)
	go func() {
		end, ok := l.collect(context.Background(), ref1.key())
		assert.True(t, ok)
		collected <- end
	}()
	select {
	case end := <-collected:
		t.Fatalf("collected %+v before the loop ended", end)
	case <-time.After(200 * time.Millisecond): // a check that it waits, not a timing claim
	}
	close(release)
	select {
	case end := <-collected:
		assert.Equal(t, result, end.result)
		assert.NoError(t, end.err)
	case <-time.After(10 * time.Second):
		t.Fatal("the running loop's end was not collected")
	}
	l.wg.Wait()
	assert.Equal(t, []workflows.WaitEvent{result}, o.all(), "the feed was told the same end")
	assert.Empty(t, c.all(), "Temporal took no answer")

	// Asked again after the end: still kept.
	end, ok := l.collect(context.Background(), ref1.key())
	require.True(t, ok)
	assert.Equal(t, result, end.result)
}

// An end is collectable from the moment the feed is told it, while its
// answer to Temporal still waits or is tried again (a busy engine), and
// forgotten once Temporal records it.
func TestAnEndIsKeptUntilTemporalRecordsIt(t *testing.T) {
	c := newFakeCompleter()
	c.fail = []error{serviceerror.NewUnavailable("busy"), serviceerror.NewUnavailable("busy"), serviceerror.NewUnavailable("busy")}
	told := make(chan struct{})
	l := newTestLoops(c, observerFunc(func(string, workflows.WaitEvent) { close(told) }))
	result := workflows.WaitForResult{Reason: workflows.WaitReasonMatched}
	l.start(context.Background(), ref1, loopStart{}, func(context.Context) (any, error) { return result, nil })
	<-told
	end, ok := l.collect(context.Background(), ref1.key())
	require.True(t, ok, "kept while its answer is retried")
	assert.Equal(t, result, end.result)
	awaitAnswers(t, c, 1)
	l.wg.Wait()
	assert.False(t, l.knows(ref1.key()), "forgotten once recorded")
}

// observerFunc is an Observer from a function.
type observerFunc func(string, workflows.WaitEvent)

func (f observerFunc) Observe(id string, e workflows.WaitEvent) { f(id, e) }

// A wait that asks a worker with no end of its loop gets none, and a loop
// of that run resumed later starts stopped: it tells nobody an answer its
// run will not record.
func TestAnUnknownLoopIsNotCollectedAndStartsStopped(t *testing.T) {
	c, o := newFakeCompleter(), &recordingObserver{}
	l := newTestLoops(c, o)
	_, ok := l.collect(context.Background(), ref1.key())
	assert.False(t, ok)
	l.start(context.Background(), ref1, loopStart{}, func(ctx context.Context) (any, error) {
		assert.Error(t, ctx.Err(), "it starts stopped")
		return workflows.WaitForResult{Reason: workflows.WaitReasonTimeout}, nil
	})
	got := awaitAnswers(t, c, 1)
	var canceled *temporal.CanceledError
	require.ErrorAs(t, got[0].err, &canceled)
	l.wg.Wait()
	assert.Empty(t, o.all(), "nothing told")
}
