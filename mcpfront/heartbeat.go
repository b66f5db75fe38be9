package mcpfront

import (
	"math"
	"sync/atomic"
	"time"
)

// HeartbeatPolicy chooses the heartbeat timeout of each probe loop this
// front starts. Every heartbeat is a write to Temporal's persistence, and a
// probe loop sends one every 0.8 × its timeout, so n loops cost
// n / (0.8 × timeout) writes per second: a fixed timeout makes the cost of
// holding waits grow with their number until the engine spends itself on
// heartbeats. The policy keeps the heartbeats of the loops in flight
// within PerSecond by lengthening the timeout as they grow, between Min and
// Max. The timeout is also the recovery bound: a loop lost with its worker
// is retried after it, so a crash under load is noticed later, never
// missed.
type HeartbeatPolicy struct {
	// Min is the timeout when few loops run (wait_for.heartbeat_timeout_sec).
	Min time.Duration
	// Max caps the timeout however many loops run; 0 is Min (a fixed
	// timeout).
	Max time.Duration
	// PerSecond is the heartbeat budget of the loops in flight; 0 is no
	// budget (Min, or the poll interval when longer, up to Max).
	PerSecond int
}

// Timeout is the heartbeat timeout of a loop sampling every poll, started
// while open loops (this one included) are in flight: at least Min and one
// poll interval (a loop that sleeps between samples has nothing to report
// sooner), long enough for open loops to keep within PerSecond, at most
// Max.
func (p HeartbeatPolicy) Timeout(poll time.Duration, open int) time.Duration {
	t := max(p.Min, poll)
	if p.PerSecond > 0 && open > 0 {
		// open / (0.8 × t) ≤ PerSecond, in whole seconds.
		need := time.Duration(math.Ceil(float64(open)/(0.8*float64(p.PerSecond)))) * time.Second
		t = max(t, need)
	}
	if limit := max(p.Max, p.Min); t > limit {
		t = limit
	}
	return t
}

// loopGauge counts the wait_for calls in flight in this front: the probe
// loops it holds open on behalf of callers.
type loopGauge struct{ n atomic.Int64 }

// enter counts a call in; the returned func counts it out.
func (g *loopGauge) enter() (leave func()) {
	g.n.Add(1)
	return func() { g.n.Add(-1) }
}

// open is the number of calls in flight, at least 1 (the one asking).
func (g *loopGauge) open() int { return max(int(g.n.Load()), 1) }
