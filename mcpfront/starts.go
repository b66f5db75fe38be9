package mcpfront

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/mark3labs/mcp-go/mcp"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/durawait/durawait/mcpwire"
)

// ErrOverloaded is returned (wrapped, with Temporal's last answer) when a
// wait could not be started within the start budget because Temporal kept
// answering that it is busy. Nothing was lost: the same call, made again,
// starts the wait (or attaches to it, if a start went through after all).
var ErrOverloaded = errors.New("durawait is overloaded")

// ErrDiskFull is returned (wrapped, with Temporal's answer) when the
// engine could not write the start because its disk is full: retrying
// would not help until someone frees space, so the start is not retried.
var ErrDiskFull = errors.New("the engine's disk is full (with the embedded engine: the data dir's disk)")

// Defaults of StartOptions.
const (
	// DefaultStartConcurrency bounds the workflow starts in flight at once:
	// a burst of calls queues here instead of overrunning the engine, whose
	// start rate (history shards, persistence) is what it is.
	DefaultStartConcurrency = 64
	// DefaultStartBudget bounds how long one call's start is retried,
	// from its first attempt, before the call answers ErrOverloaded: well
	// inside the minutes an MCP client waits for a tool call. (Its wait for
	// a turn in the queue is bounded by the caller alone.)
	DefaultStartBudget = 60 * time.Second
)

// StartOptions say how the front end starts workflows against a busy
// engine.
type StartOptions struct {
	// Concurrency bounds the starts in flight; the rest wait their turn.
	// 0 is DefaultStartConcurrency.
	Concurrency int
	// Budget bounds how long one start is retried from its first attempt;
	// 0 is DefaultStartBudget.
	Budget time.Duration
	// FirstBackoff is the first pause before a retry (doubling, with
	// jitter, up to MaxBackoff); 0 is 100 ms. MaxBackoff 0 is 2 s.
	FirstBackoff, MaxBackoff time.Duration
}

// starter queues workflow starts and retries them while Temporal is busy.
// A start is idempotent here (a wait's ID is derived from its arguments and
// an invocation's is chosen before the first attempt, both started with the
// use-existing conflict policy), so a retry after an attempt whose answer
// was lost attaches to what that attempt started.
type starter struct {
	slots  *turns
	budget time.Duration
	pauses pauses
}

func newStarter(o StartOptions) *starter {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultStartConcurrency
	}
	if o.Budget <= 0 {
		o.Budget = DefaultStartBudget
	}
	if o.FirstBackoff <= 0 {
		o.FirstBackoff = firstPause
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = maxPause
	}
	return &starter{slots: newTurns(o.Concurrency), budget: o.Budget,
		pauses: newPauses(o.FirstBackoff, max(o.MaxBackoff, o.FirstBackoff))}
}

// do runs start in turn, retrying it with backoff while Temporal answers
// that it is busy. Waiting for a turn is bounded only by ctx (the caller's
// own deadline: a burst of calls is queued, not refused); the budget bounds
// the time from the first attempt on. It returns start's error when it is
// not a busy answer, ErrOverloaded (wrapping the last busy answer) when the
// budget runs out, and ctx's error when the caller goes away.
//
// The budget counts the time this process ran, not the time it was
// stopped (SIGSTOP, a closed laptop lid, a starved VM): a step of the loop
// (an attempt, a pause) that took longer than it could have while running
// moves the deadline on by the excess (see afterStall), so a call that met
// a stall gets its retries after it, as a call that met none.
func (s *starter) do(ctx context.Context, start func(context.Context) error) error {
	var deadline time.Time // set at the first attempt
	bounded := func(ctx context.Context) error {
		began := time.Now()
		if deadline.IsZero() {
			deadline = began.Add(s.budget)
		}
		// A retry whose turn came after the budget ran out (it waited for
		// a slot behind a burst) still gets a real attempt.
		end := later(deadline, began.Add(min(s.budget, minStartAttempt)))
		ctx, cancel := context.WithDeadline(ctx, end)
		defer cancel()
		err := start(ctx)
		deadline = s.afterStall(deadline, began, end.Sub(began))
		return err
	}
	pauses := s.pauses
	var last error
	for {
		err := s.attempt(ctx, bounded)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case diskFull(err):
			return fmt.Errorf("%w (Temporal: %w)", ErrDiskFull, err)
		case !busy(err):
			return err
		}
		if last == nil || !errors.Is(err, context.DeadlineExceeded) {
			last = err // a busy answer of Temporal's says more than the budget's end
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%w: the start was retried for %s (Temporal: %v)", ErrOverloaded, s.budget, last)
		}
		budget, cancel := context.WithDeadline(ctx, deadline)
		began, pause := time.Now(), pauses.next()
		_ = sleep(budget, pause)
		cancel()
		deadline = s.afterStall(deadline, began, pause)
	}
}

// stallSlack is how much longer than it could take a step may run before
// the excess counts as time the process was stopped: more than the
// scheduling delays and GC pauses of a busy process.
const stallSlack = 2 * time.Second

// afterStall is a start's deadline after a step of its loop that began
// at began and could take at most longest: as it was, unless the step ran
// past longest by more than stallSlack (the process was stopped); then
// moved on by that excess, and to at least a real attempt's time from now
// (the stall may have come after the budget was spent: the attempt under
// way then lost its time to it).
func (s *starter) afterStall(deadline, began time.Time, longest time.Duration) time.Time {
	over := time.Since(began) - longest
	if over <= stallSlack {
		return deadline
	}
	return later(deadline.Add(over), time.Now().Add(min(s.budget, minStartAttempt)))
}

// minStartAttempt is the least time a start attempt is given.
const minStartAttempt = 10 * time.Second

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// attempt runs start once it has a slot, taken in the turn of the
// caller's principal (see turns); the wait for a slot ends only with ctx.
func (s *starter) attempt(ctx context.Context, start func(context.Context) error) error {
	if err := s.slots.acquire(ctx, mcpwire.PrincipalFrom(ctx)); err != nil {
		return err
	}
	defer s.slots.release()
	return start(ctx)
}

// getResult waits for a run's result. A busy engine's answer (its long
// poll cut off by a deadline, unavailable, resource exhausted) is not the
// wait's outcome: the wait runs on durably, so the caller keeps waiting,
// asking again with backoff, until the result comes or ctx ends.
func getResult(ctx context.Context, run client.WorkflowRun, result any) error {
	pauses := newBackoff()
	for {
		err := run.Get(ctx, result)
		switch {
		case err == nil || !busy(err):
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		}
		if err := pauses.wait(ctx); err != nil {
			return err
		}
	}
}

// pauses pace the retries of a busy engine: each pause is drawn at random
// from [d/2, d], d doubling from first up to max, so a burst of callers
// does not come back at once. They are cenkalti/backoff's
// ExponentialBackOff, as worker/downstream's reconnect delays are; its
// pauses are its interval ± RandomizationFactor, so an interval of 3/4·d
// and a factor of 1/3 span [d/2, d]. A copy starts over (a fresh
// ExponentialBackOff begins at InitialInterval).
type pauses struct{ b backoff.ExponentialBackOff }

// Pacing of a busy engine's retries: what d doubles from and up to when the
// options name neither.
const (
	firstPause = 100 * time.Millisecond
	maxPause   = 2 * time.Second
)

func newPauses(first, max time.Duration) pauses {
	return pauses{b: backoff.ExponentialBackOff{
		InitialInterval:     first - first/4,
		RandomizationFactor: 1.0 / 3,
		Multiplier:          2,
		MaxInterval:         max - max/4,
	}}
}

// newBackoff pauses 100 ms doubling to 2 s.
func newBackoff() pauses { return newPauses(firstPause, maxPause) }

// next is the next pause.
func (p *pauses) next() time.Duration { return p.b.NextBackOff() }

// wait pauses for the next pause, or until ctx ends (its error).
func (p *pauses) wait(ctx context.Context) error { return sleep(ctx, p.next()) }

// sleep pauses for d, or until ctx ends (its error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// diskFull reports whether err says the engine's storage is out of space:
// SQLite's "database or disk is full", or ENOSPC.
func diskFull(err error) bool {
	if errors.Is(err, syscall.ENOSPC) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "disk is full") || strings.Contains(msg, "no space left on device")
}

// busy reports whether err says Temporal is busy or briefly unreachable
// (worth another try), as opposed to refusing the start.
func busy(err error) bool {
	var exhausted *serviceerror.ResourceExhausted
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	switch {
	case errors.As(err, &exhausted), errors.As(err, &unavailable), errors.As(err, &deadline):
		return true
	case errors.Is(err, context.DeadlineExceeded):
		// The SDK's own per-call timeout, the caller's context being alive.
		return true
	}
	switch status.Code(err) {
	case codes.ResourceExhausted, codes.Unavailable, codes.DeadlineExceeded, codes.Aborted:
		return true
	}
	return false
}

// startFailed answers a call whose wait could not be started: an overload
// says to call again (the same arguments name the same wait, so nothing
// starts twice); anything else is Temporal's refusal.
func startFailed(tool string, err error) *mcp.CallToolResult {
	return mcp.NewToolResultError(startFailedMessage(tool, err))
}

// startFailedMessage is startFailed's text.
func startFailedMessage(tool string, err error) string {
	return tool + ": " + startFailure(err)
}

// startFailure says why a wait was not started.
func startFailure(err error) string {
	if errors.Is(err, ErrOverloaded) {
		return fmt.Sprintf("%v; call again with the same arguments: they name the same wait, so it starts once", err)
	}
	if errors.Is(err, ErrDiskFull) {
		return fmt.Sprintf("%v; free space there, then call again with the same arguments: nothing was started", err)
	}
	return fmt.Sprintf("could not start the wait: %v", err)
}
