package heapfloor

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPercentRaisesASmallHeapsGoalToTheFloor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name  string
		live  uint64
		floor uint64
		base  int
		want  int
	}{
		{"a small heap's goal is raised to the floor", 40 * mib, 256 * mib, 100, 540},
		{"a heap whose goal reaches the floor keeps the base", 128 * mib, 256 * mib, 100, 100},
		{"a large heap keeps the base", 800 * mib, 256 * mib, 100, 100},
		{"a tiny heap is capped", 1 * mib, 256 * mib, 100, maxPercent},
		{"no heap read yet keeps the base", 0, 256 * mib, 100, 100},
		{"another base", 100 * mib, 256 * mib, 50, 156},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Percent(tc.live, tc.floor, tc.base)
			assert.Equal(t, tc.want, got)
			if got < maxPercent && tc.live > 0 {
				assert.GreaterOrEqual(t, tc.live+tc.live*uint64(got)/100, min(tc.floor, tc.live*uint64(100+tc.base)/100)*99/100,
					"the goal reaches the floor (or the base's own goal)")
			}
		})
	}
}

func TestEnabledUnlessTheUserSetGOGC(t *testing.T) {
	assert.True(t, Enabled(func(string) string { return "" }))
	assert.False(t, Enabled(func(k string) string {
		if k == "GOGC" {
			return "100"
		}
		return ""
	}))
	assert.False(t, Enabled(func(k string) string {
		if k == "GOGC" {
			return "off"
		}
		return ""
	}))
}

// gcPercent reads the runtime's GC percent (setting it back at once).
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestKeepRaisesThePercentAndRestoresTheBase(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	runtime.GC() // the live heap is known after a collection
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// A floor far above this test's heap: the percent goes up.
	go func() {
		defer close(done)
		Keep(ctx, Options{Floor: 1 << 40, Base: 100, Interval: 5 * time.Millisecond})
	}()
	require.Eventually(t, func() bool { return gcPercent() == maxPercent }, 10*time.Second, 5*time.Millisecond,
		"the percent is raised for a heap far below the floor")
	cancel()
	<-done
	assert.Equal(t, 100, gcPercent(), "the base percent is set back when Keep ends")
}
