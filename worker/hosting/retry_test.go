package hosting

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The delays double from 100 ms to 2 s, and start over after a reset.
func TestRetryDelayDoublesToItsCapAndStartsOver(t *testing.T) {
	d := newRetryDelay()
	var got []time.Duration
	for range 7 {
		got = append(got, d.next())
	}
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 2 * time.Second, 2 * time.Second}, got)
	d.reset()
	assert.Equal(t, 100*time.Millisecond, d.next())
}

// A sweep that failed is made again after a retry delay, not an interval
// later (an hour here: a repeat that waited for it would never get to its
// third run).
func TestAFailedRunIsRepeatedWithoutWaitingForTheInterval(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results := []bool{false, false, true}
	runs := make(chan int, len(results)+1)
	n := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		repeat(ctx, every(time.Hour), func() bool {
			n++
			runs <- n
			return n > len(results) || results[n-1]
		})
	}()
	for want := 1; want <= len(results); want++ {
		select {
		case got := <-runs:
			require.Equal(t, want, got)
		case <-time.After(time.Minute):
			t.Fatalf("run %d never came: a failed run was not repeated before the interval", want)
		}
	}
	cancel()
	<-done
	assert.Empty(t, runs, "after a run that succeeded, the next waits for the interval")
}

// A host's first sweeps after the first come at 2, 4 and 8 s, the rest
// every interval; a short interval caps them all.
func TestEarlySweepsComeSoonThenEveryInterval(t *testing.T) {
	var got []time.Duration
	for n := 1; n <= 5; n++ {
		got = append(got, sweepPause(n, 30*time.Second))
	}
	assert.Equal(t, []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 30 * time.Second, 30 * time.Second}, got)
	assert.Equal(t, 3*time.Second, sweepPause(2, 3*time.Second))
}

// repeat counts the runs that went through: a failed run is neither paced
// by pause nor counted.
func TestRepeatCountsTheRunsThatWentThrough(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results := []bool{true, false, true, true}
	var asked []int
	runs := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		repeat(ctx, func(n int) time.Duration { asked = append(asked, n); return time.Millisecond }, func() bool {
			runs++
			if runs == len(results) {
				cancel()
			}
			return results[min(runs, len(results))-1]
		})
	}()
	<-done
	assert.Equal(t, []int{1, 2, 3}, asked)
}
