package hosting

import (
	"context"
	"time"
)

// retryDelay paces the attempts of a call Temporal did not take (an
// answer, a record, a signal, a sweep): 100 ms, doubling to 2 s, so a
// busy engine is asked again soon but not hammered.
type retryDelay struct{ last time.Duration }

// The bounds of retryDelay.
const (
	retryInitial = 100 * time.Millisecond
	retryMax     = 2 * time.Second
)

func newRetryDelay() *retryDelay { return &retryDelay{} }

// next is the delay before the next attempt.
func (d *retryDelay) next() time.Duration {
	d.last = min(max(2*d.last, retryInitial), retryMax)
	return d.last
}

// reset starts the doubling over, after an attempt that was taken.
func (d *retryDelay) reset() { d.last = 0 }

// repeat runs once at once and then again after pause(n) once its n-th
// run that went through has (n counts from 1), until ctx ends; after a run
// that reports a failure, the next comes after a retryDelay instead.
func repeat(ctx context.Context, pause func(n int) time.Duration, once func() bool) {
	b := newRetryDelay()
	for n := 0; ; {
		var wait time.Duration
		if once() {
			b.reset()
			n++
			wait = pause(n)
		} else {
			wait = b.next()
		}
		if sleepCtx(ctx, wait) != nil {
			return
		}
	}
}

// every is repeat's pause of d after every run.
func every(d time.Duration) func(int) time.Duration {
	return func(int) time.Duration { return d }
}
