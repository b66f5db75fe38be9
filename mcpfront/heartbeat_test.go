package mcpfront

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/workflows"
)

func TestHeartbeatPolicyTimeout(t *testing.T) {
	const s = time.Second
	budget := HeartbeatPolicy{Min: 5 * s, Max: 60 * s, PerSecond: 250}
	for _, tc := range []struct {
		name   string
		policy HeartbeatPolicy
		poll   time.Duration
		open   int
		want   time.Duration
	}{
		{"few loops keep the minimum", budget, 2 * s, 10, 5 * s},
		{"up to the budget at the minimum", budget, 2 * s, 1000, 5 * s},
		{"past the budget the timeout grows", budget, 2 * s, 1001, 6 * s},
		{"5,000 loops within 250 beats/s", budget, 2 * s, 5000, 25 * s},
		{"10,000 loops within 250 beats/s", budget, 2 * s, 10000, 50 * s},
		{"capped however many", budget, 2 * s, 100000, 60 * s},
		{"a slow poll lengthens it", budget, 30 * s, 1, 30 * s},
		{"no budget is a fixed timeout", HeartbeatPolicy{Min: 5 * s, Max: 60 * s}, 2 * s, 100000, 5 * s},
		{"no budget still follows a slow poll", HeartbeatPolicy{Min: 5 * s, Max: 60 * s}, 30 * s, 100000, 30 * s},
		{"no max is the minimum", HeartbeatPolicy{Min: 5 * s, PerSecond: 1}, 2 * s, 100, 5 * s},
		{"a poll past the max is capped", budget, 90 * s, 1, 60 * s},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.policy.Timeout(tc.poll, tc.open); got != tc.want {
				t.Errorf("Timeout(%v, %d) = %v, want %v", tc.poll, tc.open, got, tc.want)
			}
			// The budget holds wherever the cap allows it.
			if p := tc.policy; p.PerSecond > 0 && tc.want < max(p.Max, p.Min) {
				if rate := float64(tc.open) / (0.8 * tc.want.Seconds()); rate > float64(p.PerSecond) {
					t.Errorf("%d loops at %v beat %.0f/s, over the budget %d", tc.open, tc.want, rate, p.PerSecond)
				}
			}
		})
	}
}

func TestLoopGaugeCountsCallsInFlight(t *testing.T) {
	var g loopGauge
	if got := g.open(); got != 1 {
		t.Fatalf("open() with none in flight = %d, want 1 (the caller asking)", got)
	}
	leaveA := g.enter()
	leaveB := g.enter()
	if got := g.open(); got != 2 {
		t.Fatalf("open() = %d, want 2", got)
	}
	leaveA()
	leaveB()
	if got := g.n.Load(); got != 0 {
		t.Fatalf("after both left: %d in flight, want 0", got)
	}
}

// The wait a front starts carries the policy's timeout for the calls in
// flight at that front, not a fixed one.
func TestAWaitForStartsWithTheHeartbeatTimeoutOfTheLoadAtItsFront(t *testing.T) {
	f := New(Options{TaskQueue: "q", Workers: fakeDownstream{order: []string{"demo"}, tools: map[string][]string{"demo": {"read_file"}}},
		Heartbeats: HeartbeatPolicy{Min: 5 * time.Second, Max: 60 * time.Second, PerSecond: 100}})
	req := mcp.CallToolRequest{}
	req.Params.Name = "wait_for"
	req.Params.Arguments = map[string]any{
		"probe": map[string]any{"tool": "demo.read_file", "args": map[string]any{}},
		"until": map[string]any{"matches": "READY"}, "poll_sec": 2,
	}
	timeout := func() time.Duration {
		w, bad := f.prepareWaitFor(context.Background(), req)
		require.Nil(t, bad)
		return w.input.(workflows.WaitForInput).HeartbeatTimeout
	}
	assert.Equal(t, 5*time.Second, timeout(), "alone: the minimum")
	for range 1000 {
		defer f.loops.enter()()
	}
	assert.Equal(t, 13*time.Second, timeout(), "1,000 calls in flight within 100 beats/s")
}
