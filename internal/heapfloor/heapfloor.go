// Package heapfloor keeps the Go garbage collector's heap goal at or above
// a floor, so that a process whose live heap is small does not collect
// many times a second.
//
// The embedded Temporal engine allocates tens of megabytes a second while
// it works, over a live heap of a few tens of megabytes: with the default
// GOGC of 100 it collects about once a second, and each collection takes a
// quarter of the CPU for tens of milliseconds, which is where an event
// post's slowest answers came from (docs/performance.md). Raising GOGC
// while the live heap is small, and only then, keeps those answers fast
// without growing a large heap: past floor / (1 + base/100) of live heap
// the collector runs at the base percent, as it would without the floor.
// (The runtime has no minimum heap goal of its own.)
package heapfloor

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Default values of Options.
const (
	// DefaultFloor is the heap goal kept at least: 256 MiB.
	DefaultFloor = 256 << 20
	// DefaultBase is the GC percent above the floor (GOGC's default).
	DefaultBase = 100
	// DefaultInterval is how often the live heap is read.
	DefaultInterval = time.Second
	// maxPercent bounds the percent set for a tiny heap.
	maxPercent = 2000
)

// liveHeap is the runtime metric of the heap the last collection found
// live.
const liveHeap = "/gc/heap/live:bytes"

// Options configure Keep. Zero fields take the defaults.
type Options struct {
	// Floor is the heap goal, in bytes, the collector is kept at or above.
	Floor uint64
	// Base is the GC percent once the live heap is large enough for it
	// to reach the floor on its own.
	Base int
	// Interval is how often the live heap is read and the percent set.
	Interval time.Duration
}

func (o Options) withDefaults() Options {
	if o.Floor == 0 {
		o.Floor = DefaultFloor
	}
	if o.Base <= 0 {
		o.Base = DefaultBase
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	return o
}

// Percent is the GC percent that makes the heap goal of a live heap of
// live bytes at least floor bytes: base when live * (1 + base/100)
// reaches the floor, more (up to 2000) below that.
func Percent(live, floor uint64, base int) int {
	if live == 0 || live+live*uint64(base)/100 >= floor {
		return base
	}
	return min(int(floor*100/live)-100, maxPercent)
}

// Enabled reports whether the floor applies: not when the user set GOGC
// (getenv reads the environment), whose value then holds as Go defines it.
func Enabled(getenv func(string) string) bool {
	return getenv("GOGC") == ""
}

// Keep sets the GC percent from the live heap every interval until ctx
// ends, and then sets the base percent back.
func Keep(ctx context.Context, opts Options) {
	opts = opts.withDefaults()
	samples := []metrics.Sample{{Name: liveHeap}}
	ticker := time.NewTicker(opts.Interval)
	defer ticker.Stop()
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
		case <-ticker.C:
		}
	}
}
