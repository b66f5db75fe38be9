package activities

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// fakeClock is a Clock that moves only when told to. SleepUntil moves it,
// since a sleeper has nothing else in flight; a deadline from WithDeadline
// ends when whoever does the work in flight (a scripted probe or judge)
// moves the clock past it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	// onDeadline, when set, is asked at the n-th WithDeadline (from 1)
	// whether the clock jumps to that deadline at once: a stand-in for
	// work in flight that outlives it.
	onDeadline func(n int, deadline time.Time) bool
	deadlines  int
}

type fakeTimer struct {
	at   time.Time
	fire func()
}

func newFakeClock(now time.Time) *fakeClock { return &fakeClock{now: now} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) SleepUntil(ctx context.Context, t time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.AdvanceTo(t)
	return ctx.Err()
}

func (c *fakeClock) WithDeadline(parent context.Context, t time.Time) (context.Context, context.CancelFunc) {
	c.mu.Lock()
	c.deadlines++
	jump := c.onDeadline != nil && c.onDeadline(c.deadlines, t)
	c.mu.Unlock()
	if jump {
		c.AdvanceTo(t)
	}
	ctx, cancel := context.WithCancelCause(parent)
	dc := &deadlineCtx{Context: ctx, deadline: t}
	timer := &fakeTimer{at: t, fire: func() { cancel(context.DeadlineExceeded) }}
	c.mu.Lock()
	if !c.now.Before(t) {
		c.mu.Unlock()
		cancel(context.DeadlineExceeded)
		return dc, func() { cancel(context.Canceled) }
	}
	c.timers = append(c.timers, timer)
	c.mu.Unlock()
	return dc, func() {
		c.mu.Lock()
		c.timers = slices.DeleteFunc(c.timers, func(x *fakeTimer) bool { return x == timer })
		c.mu.Unlock()
		cancel(context.Canceled)
	}
}

// AdvanceTo moves the clock to t, ending on the way, in order, every
// deadline due by then.
func (c *fakeClock) AdvanceTo(t time.Time) {
	for {
		c.mu.Lock()
		next := -1
		for i, tm := range c.timers {
			if !tm.at.After(t) && (next < 0 || tm.at.Before(c.timers[next].at)) {
				next = i
			}
		}
		if next < 0 {
			if c.now.Before(t) {
				c.now = t
			}
			c.mu.Unlock()
			return
		}
		tm := c.timers[next]
		c.timers = slices.Delete(c.timers, next, next+1)
		if c.now.Before(tm.at) {
			c.now = tm.at
		}
		c.mu.Unlock()
		tm.fire()
	}
}

// Advance moves the clock on by d.
func (c *fakeClock) Advance(d time.Duration) { c.AdvanceTo(c.Now().Add(d)) }

// deadlineCtx is a context that ends at a time of a fakeClock.
type deadlineCtx struct {
	context.Context
	deadline time.Time
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineCtx) Err() error {
	err := c.Context.Err()
	if err != nil && errors.Is(context.Cause(c.Context), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}
