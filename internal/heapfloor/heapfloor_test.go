package heapfloor

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
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
		{"a small heap's goal is raised to the floor", 40 * mib, 256 * mib, 50, 540},
		{"a heap whose base goal reaches the floor keeps the base", 171 * mib, 256 * mib, 50, 50},
		{"just below, the goal is the floor", 160 * mib, 256 * mib, 50, 60},
		{"a large heap keeps the base", 800 * mib, 256 * mib, 50, 50},
		{"a tiny heap is capped", 1 * mib, 256 * mib, 50, maxPercent},
		{"no heap read yet keeps the base", 0, 256 * mib, 50, 50},
		{"Go's default base", 128 * mib, 256 * mib, 100, 100},
		{"a negative base counts as 0", 512 * mib, 256 * mib, -1, 0},
		{"an absurd floor does not overflow", 1 * mib, 1 << 62, 50, maxPercent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Percent(tc.live, tc.floor, tc.base)
			assert.Equal(t, tc.want, got)
			if got < maxPercent && tc.live > 0 && got > max(tc.base, 0) {
				goal := float64(tc.live) * (1 + float64(got)/100)
				assert.InDelta(t, float64(tc.floor), goal, float64(tc.live)/100, "the goal is the floor")
			}
		})
	}
}

func TestEnabledUnlessTheUserSetGOGC(t *testing.T) {
	assert.True(t, Enabled(func(string) string { return "" }))
	for _, v := range []string{"100", "off"} {
		assert.False(t, Enabled(func(k string) string {
			if k == "GOGC" {
				return v
			}
			return ""
		}), v)
	}
}

// gcPercent reads the runtime's GC percent.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

func TestKeepSetsThePercentAfterACollectionAndRestoresTheBase(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	floor := uint64(1 << 40)
	go func() {
		defer close(done)
		Keep(ctx, Options{Floor: floor, Base: 50})
	}()
	// A floor far above this test's heap: after a collection the percent
	// goes up, whatever it was before.
	require.Eventually(t, func() bool {
		runtime.GC()
		return gcPercent() == maxPercent
	}, 10*time.Second, 10*time.Millisecond, "the percent is raised for a heap far below the floor")
	cancel()
	runtime.GC()
	<-done
	assert.Equal(t, 50, gcPercent(), "the base percent is set back when Keep ends")
}

func TestNotifyCollectionsTellsOfEachCollection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cycles := notifyCollections(ctx)
	for i := range 3 {
		require.Eventually(t, func() bool {
			runtime.GC()
			select {
			case <-cycles:
				return true
			default:
				return false
			}
		}, 10*time.Second, 10*time.Millisecond, "collection %d is told", i+1)
	}
}
