package mcpfront

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fast is a starter whose pauses are short, so the tests run quickly; the
// assertions are on outcomes and counts, never on time.
func fast(concurrency int, budget time.Duration) *starter {
	return newStarter(StartOptions{Concurrency: concurrency, Budget: budget, FirstBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
}

func TestABusyEngineIsRetriedUntilTheStartGoesThrough(t *testing.T) {
	for _, busyErr := range []error{
		serviceerror.NewResourceExhausted(0, "namespace rps limit"),
		serviceerror.NewUnavailable("frontend restarting"),
		fmt.Errorf("start: %w", context.DeadlineExceeded), // the SDK's own per-call timeout
		status.Error(codes.Unavailable, "connection refused"),
	} {
		t.Run(busyErr.Error(), func(t *testing.T) {
			var attempts int
			err := fast(1, time.Minute).do(t.Context(), func(context.Context) error {
				attempts++
				if attempts < 4 {
					return busyErr
				}
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, 4, attempts)
		})
	}
}

func TestARefusalIsAnsweredAtOnce(t *testing.T) {
	refusal := serviceerror.NewInvalidArgument("search attribute DurawaitTool is not defined")
	var attempts int
	err := fast(1, time.Minute).do(t.Context(), func(context.Context) error { attempts++; return refusal })
	require.ErrorIs(t, err, refusal)
	assert.NotErrorIs(t, err, ErrOverloaded)
	assert.Equal(t, 1, attempts)
}

// An engine that stays busy past the budget is an overload, named with
// Temporal's last answer, and the call's answer says to call again —
// never that the engine is unavailable.
func TestAnEngineBusyPastTheBudgetIsAnOverload(t *testing.T) {
	var attempts atomic.Int32
	err := fast(1, 50*time.Millisecond).do(t.Context(), func(ctx context.Context) error {
		attempts.Add(1)
		return serviceerror.NewResourceExhausted(0, "persistence max qps reached")
	})
	require.ErrorIs(t, err, ErrOverloaded)
	assert.Contains(t, err.Error(), "persistence max qps reached")
	assert.Greater(t, attempts.Load(), int32(1), "it was retried")

	msg := startFailedMessage("wait_for", err)
	assert.Contains(t, msg, "wait_for: durawait is overloaded")
	assert.Contains(t, msg, "call again with the same arguments")
	assert.NotContains(t, msg, "unavailable?")
	assert.Equal(t, "wait_for: could not start the wait: boom", startFailedMessage("wait_for", errors.New("boom")))
}

// A start under way when the process is stopped (SIGSTOP, a laptop lid)
// comes back past its budget, with its attempt's deadline gone: the time
// the process did not run is not the engine's, so the start is tried
// again after the stall, not answered overloaded. The stall here is an
// attempt that returns long after its deadline, as a stopped process's
// attempt does.
func TestAStallDoesNotSpendTheStartBudget(t *testing.T) {
	const budget = 100 * time.Millisecond
	var attempts int
	err := fast(1, budget).do(t.Context(), func(ctx context.Context) error {
		attempts++
		if attempts == 1 {
			<-ctx.Done()
			time.Sleep(stallSlack + budget) // the process is stopped past its deadline
			return fmt.Errorf("start: %w", ctx.Err())
		}
		return nil
	})
	require.NoError(t, err, "the start is tried again after the stall")
	assert.Equal(t, 2, attempts)
}

func TestACallerThatLeavesStopsItsStart(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var attempts atomic.Int32
	err := fast(1, time.Minute).do(ctx, func(context.Context) error {
		if attempts.Add(1) == 2 {
			cancel()
		}
		return serviceerror.NewUnavailable("busy")
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, ErrOverloaded)
}

// A burst queues: never more starts in flight than the concurrency, and
// every one of them goes through.
func TestABurstQueuesWithinTheConcurrency(t *testing.T) {
	s := fast(4, time.Minute)
	var inFlight, peak, done atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.do(t.Context(), func(context.Context) error {
				n := inFlight.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				<-release
				inFlight.Add(-1)
				return nil
			})
			if err == nil {
				done.Add(1)
			}
		}()
	}
	// Let the first four in, then all of them through.
	require.Eventually(t, func() bool { return inFlight.Load() == 4 }, 10*time.Second, time.Millisecond)
	close(release)
	wg.Wait()
	assert.Equal(t, int32(4), peak.Load())
	assert.Equal(t, int32(40), done.Load())
}

// Waiting for a turn is not the budget: a call queued behind a slow start
// for longer than the budget still starts when its turn comes (the
// caller's own deadline bounds the queue).
func TestAQueuedCallOutwaitsTheBudget(t *testing.T) {
	s := fast(1, 20*time.Millisecond)
	release := make(chan struct{})
	holding := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.do(t.Context(), func(context.Context) error { close(holding); <-release; return nil })
	}()
	<-holding
	second := make(chan error, 1)
	var started atomic.Bool
	go func() {
		second <- s.do(t.Context(), func(context.Context) error { started.Store(true); return nil })
	}()
	// The second call waits for the slot for many budgets' length.
	deadline := time.Now().Add(10 * 20 * time.Millisecond)
	for time.Now().Before(deadline) {
		require.False(t, started.Load(), "the second start ran while the slot was held")
		select {
		case err := <-second:
			t.Fatalf("the queued call answered before its turn: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	close(release)
	require.NoError(t, <-first)
	require.NoError(t, <-second)
	assert.True(t, started.Load())
}

// A retry whose turn comes only after the budget ran out still gets a
// real attempt (with time to go through), not one born past its deadline.
func TestARetryQueuedPastTheBudgetStillAttempts(t *testing.T) {
	s := fast(1, 20*time.Millisecond)
	var attempts atomic.Int32
	holder := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.do(t.Context(), func(ctx context.Context) error {
			if attempts.Add(1) == 1 {
				// The first attempt is busy; before its retry, another call
				// takes the only slot for longer than the budget.
				go func() {
					_ = s.do(t.Context(), func(context.Context) error { close(holder); <-release; return nil })
				}()
				return serviceerror.NewUnavailable("busy")
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil
		})
	}()
	<-holder
	time.Sleep(50 * time.Millisecond) // past the 20 ms budget, while the retry waits for the slot
	close(release)
	require.NoError(t, <-done, "the retry went through")
	assert.Equal(t, int32(2), attempts.Load())
}

// busyRun is a run whose result Temporal answers busy a few times first.
type busyRun struct {
	client.WorkflowRun
	busyFor int
	gets    int
	answer  error
}

func (r *busyRun) Get(ctx context.Context, result any) error {
	r.gets++
	if r.gets <= r.busyFor {
		return fmt.Errorf("get history: %w", context.DeadlineExceeded)
	}
	if r.answer != nil {
		return r.answer
	}
	*(result.(*string)) = "matched"
	return nil
}

// A busy engine's answer while the call waits for the result is not the
// wait's outcome: the call keeps waiting for it (the wait runs on durably);
// the wait's own failure is answered as it is.
func TestAResultAskedOfABusyEngineIsAskedAgain(t *testing.T) {
	run := &busyRun{busyFor: 3}
	var got string
	require.NoError(t, getResult(t.Context(), run, &got))
	assert.Equal(t, "matched", got)
	assert.Equal(t, 4, run.gets)

	failed := &busyRun{answer: errors.New("workflow execution error: probe hung")}
	require.ErrorContains(t, getResult(t.Context(), failed, &got), "probe hung")
	assert.Equal(t, 1, failed.gets)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, getResult(ctx, &busyRun{busyFor: 1000}, &got), context.Canceled)
}

// A full disk is named to the caller at once, not retried into "durawait
// is overloaded": nothing helps until someone frees space.
func TestAFullDiskIsNamedNotRetried(t *testing.T) {
	for _, full := range []error{
		serviceerror.NewUnavailable("createOrUpdateCurrentExecution failed: database or disk is full"),
		fmt.Errorf("write: %w", syscall.ENOSPC),
	} {
		var attempts int
		err := fast(1, time.Minute).do(t.Context(), func(context.Context) error { attempts++; return full })
		require.ErrorIs(t, err, ErrDiskFull)
		assert.NotErrorIs(t, err, ErrOverloaded)
		assert.Equal(t, 1, attempts)
		msg := startFailedMessage("wait_for", err)
		assert.Contains(t, msg, "the engine's disk is full (with the embedded engine: the data dir's disk)")
		assert.Contains(t, msg, "free space there, then call again")
		assert.NotContains(t, msg, "overloaded")
	}
}

// A busy engine's pauses are drawn from [d/2, d], d doubling from the first
// pause up to the cap; a copy of the pauses starts over. Drawn many times,
// the pauses fill their range (the jitter is real) and never leave it.
func TestPausesDoubleWithJitterUpToTheCap(t *testing.T) {
	for _, tc := range []struct {
		name       string
		p          pauses
		first, max time.Duration
	}{
		{"busy engine", newBackoff(), 100 * time.Millisecond, 2 * time.Second},
		{"starter's", newStarter(StartOptions{FirstBackoff: 30 * time.Millisecond, MaxBackoff: 500 * time.Millisecond}).pauses,
			30 * time.Millisecond, 500 * time.Millisecond},
		{"first above max", newStarter(StartOptions{FirstBackoff: 3 * time.Second, MaxBackoff: time.Second}).pauses,
			3 * time.Second, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const draws = 2000
			d := tc.first
			for step := range 8 {
				lo, hi := d/2, d
				least, most := hi, lo
				for range draws {
					p := tc.p // a copy: at step `step` after as many draws
					var got time.Duration
					for range step + 1 {
						got = p.next()
					}
					require.GreaterOrEqual(t, got, lo, "step %d", step)
					require.LessOrEqual(t, got, hi, "step %d", step)
					least, most = min(least, got), max(most, got)
				}
				spread := hi - lo
				assert.Less(t, least, lo+spread/20, "step %d: the pauses reach down to d/2", step)
				assert.Greater(t, most, hi-spread/20, "step %d: the pauses reach up to d", step)
				d = min(2*d, tc.max)
			}
		})
	}
}

func TestPausesWaitEndsWithTheContext(t *testing.T) {
	p := newPauses(time.Hour, time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, p.wait(ctx), context.Canceled)
	p = newPauses(time.Millisecond, time.Millisecond)
	assert.NoError(t, p.wait(t.Context()))
}
