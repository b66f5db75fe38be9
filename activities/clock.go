package activities

import (
	"context"
	"time"
)

// Clock is the time a probe loop runs on: the current time, a sleep with
// nothing else in flight, and a deadline that work in flight is raced
// against. SystemClock is the real one; tests run the loop on a fake.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// SleepUntil returns nil once the clock reaches t, or ctx's error if ctx
	// ends first.
	SleepUntil(ctx context.Context, t time.Time) error
	// WithDeadline returns a copy of ctx that ends once the clock reaches t;
	// its Deadline is t.
	WithDeadline(ctx context.Context, t time.Time) (context.Context, context.CancelFunc)
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// SleepUntil waits on a timer for t, or until ctx ends.
func (SystemClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WithDeadline is context.WithDeadline.
func (SystemClock) WithDeadline(ctx context.Context, t time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, t)
}
