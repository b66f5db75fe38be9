package downstream

import (
	"time"

	"github.com/cenkalti/backoff/v5"
)

// retryPolicy spaces out the connection attempts to one server: jittered
// exponential backoff that grows after every failed attempt and after every
// connection that died young, and starts over only once a connection has
// stayed up for stableAfter. A server that accepts a connection and drops it
// at once is therefore retried ever more slowly, not in a tight loop.
type retryPolicy struct {
	b           *backoff.ExponentialBackOff
	stableAfter time.Duration
}

// Jitter and growth of the reconnect delays: each delay is the current
// interval ±20 %, and the interval doubles, so delays grow strictly until
// they reach the cap.
const (
	retryJitter     = 0.2
	retryMultiplier = 2
)

func newRetryPolicy(o Options) *retryPolicy {
	b := &backoff.ExponentialBackOff{
		InitialInterval:     o.MinBackoff,
		RandomizationFactor: retryJitter,
		Multiplier:          retryMultiplier,
		MaxInterval:         o.MaxBackoff,
	}
	b.Reset()
	return &retryPolicy{b: b, stableAfter: o.StableAfter}
}

// failed returns the delay before the next attempt after one that did not
// connect.
func (p *retryPolicy) failed() time.Duration { return p.b.NextBackOff() }

// ended returns the delay before reconnecting after a connection that was up
// for lived ended. A connection that stayed up for stableAfter resets the
// backoff; a shorter one counts as a failed attempt.
func (p *retryPolicy) ended(lived time.Duration) time.Duration {
	if lived >= p.stableAfter {
		p.b.Reset()
	}
	return p.b.NextBackOff()
}
