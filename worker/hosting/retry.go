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

// repeat runs once at once and then every interval, until ctx ends; after
// a run that reports a failure, the next comes after a retryDelay instead.
func repeat(ctx context.Context, interval time.Duration, once func() bool) {
	b := newRetryDelay()
	for {
		wait := interval
		if once() {
			b.reset()
		} else {
			wait = b.next()
		}
		if sleepCtx(ctx, wait) != nil {
			return
		}
	}
}
