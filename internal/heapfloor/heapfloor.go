// Package heapfloor keeps the Go garbage collector's heap goal at or above
// a floor, so that a process whose live heap is small does not collect
// many times a second.
//
// The embedded Temporal engine allocates tens of megabytes a second while
// it works, over a live heap of a few tens of megabytes: at durawait's GC
// percent (50) it collected more than once a second, and each collection
// took a quarter of the CPU for tens of milliseconds, which is where an
// event post's slowest answers came from (docs/performance.md). Raising the
// percent while the live heap is small, and only then, keeps those answers
// fast without growing a large heap: once the base percent's own goal
// reaches the floor, the collector runs at the base percent, as it would
// without the floor. (The runtime has no minimum heap goal of its own.)
package heapfloor

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// DefaultFloor is the heap goal kept at least: 256 MiB.
const DefaultFloor = 256 << 20

// maxPercent bounds the percent set for a tiny heap (whose goal is then
// 21 times its live heap, less than the floor below 12 MiB live).
const maxPercent = 2000

// liveHeap is the runtime metric of the heap the last collection found
// live.
const liveHeap = "/gc/heap/live:bytes"

// Options configure Keep.
type Options struct {
	// Floor is the heap goal, in bytes, the collector is kept at or above
	// (DefaultFloor when zero).
	Floor uint64
	// Base is the GC percent once the live heap is large enough for its
	// goal to reach the floor on its own: the process's own percent.
	Base int
}

// Percent is the GC percent that makes the heap goal of a live heap of
// live bytes at least floor bytes: base when live * (1 + base/100)
// reaches the floor (or live is not known yet), more, up to 2000, below
// that. A negative base counts as 0.
func Percent(live, floor uint64, base int) int {
	base = max(base, 0)
	if live == 0 || float64(live)*(1+float64(base)/100) >= float64(floor) {
		return base
	}
	p := float64(floor)/float64(live)*100 - 100
	return min(int(p+0.5), maxPercent)
}

// Enabled reports whether the floor applies: not when the user set GOGC
// (getenv reads the environment), whose value then holds as Go defines it.
func Enabled(getenv func(string) string) bool {
	return getenv("GOGC") == ""
}

// Keep sets the GC percent from the live heap after every collection until
// ctx ends, and then sets the base percent back.
func Keep(ctx context.Context, opts Options) {
	if opts.Floor == 0 {
		opts.Floor = DefaultFloor
	}
	cycles := notifyCollections(ctx)
	samples := []metrics.Sample{{Name: liveHeap}}
	debug.SetGCPercent(opts.Base)
	current := opts.Base
	defer debug.SetGCPercent(opts.Base)
	for {
		metrics.Read(samples)
		if samples[0].Value.Kind() == metrics.KindUint64 {
			if p := Percent(samples[0].Value.Uint64(), opts.Floor, opts.Base); p != current {
				debug.SetGCPercent(p)
				current = p
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-cycles:
		}
	}
}

// notifyCollections returns a channel that receives after each garbage
// collection (at most one pending), until ctx ends: a cleanup of an
// unreachable object runs after the collection that found it, and arms the
// next one.
func notifyCollections(ctx context.Context) <-chan struct{} {
	out := make(chan struct{}, 1)
	var arm func()
	arm = func() {
		// Not a tiny allocation (those share a block, and their cleanups
		// may not run).
		sentinel := new([16]byte)
		runtime.AddCleanup(sentinel, func(struct{}) {
			if ctx.Err() != nil {
				return
			}
			select {
			case out <- struct{}{}:
			default:
			}
			arm()
		}, struct{}{})
	}
	arm()
	return out
}
