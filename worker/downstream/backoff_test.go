package downstream

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRetryPolicyGrowsUntilAConnectionStaysUp(t *testing.T) {
	p := newRetryPolicy(Options{MinBackoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second, StableAfter: time.Minute})
	var delays []time.Duration
	for range 5 {
		delays = append(delays, p.ended(time.Second)) // died young
	}
	for i := 1; i < len(delays); i++ {
		assert.Greater(t, delays[i], delays[i-1], "delays grow: %v", delays)
	}
	assert.InDelta(t, 100*time.Millisecond, delays[0], float64(20*time.Millisecond))

	for range 20 {
		assert.LessOrEqual(t, p.failed(), 12*time.Second, "capped at MaxBackoff plus jitter")
	}

	// A connection that stayed up for StableAfter starts the backoff over.
	assert.InDelta(t, 100*time.Millisecond, p.ended(time.Minute), float64(20*time.Millisecond))
}

// A server that accepts a connection and dies at once is reconnected with
// growing delays, not at once.
func TestFlappingServerIsRetriedWithGrowingDelays(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	m := NewManager([]ServerConfig{{Name: "flappy", URL: sseServer(t, true), Transport: TransportSSE}},
		Options{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Hour, StableAfter: time.Hour},
		testLogger())
	const want = 5
	var mu sync.Mutex
	var delays []time.Duration
	m.sleep = func(ctx context.Context, d time.Duration) bool {
		mu.Lock()
		defer mu.Unlock()
		delays = append(delays, d)
		if len(delays) == want {
			cancel()
		}
		return ctx.Err() == nil
	}
	m.Run(ctx) // returns once the manager's context ends

	require.Len(t, delays, want)
	for i := 1; i < len(delays); i++ {
		assert.Greater(t, delays[i], delays[i-1], "each reconnect waits longer: %v", delays)
	}
	tools, _, _ := m.ServerTools("flappy")
	assert.NotEmpty(t, tools, "the server did connect and list its tools: it flaps, it is not down")
}

// A legacy SSE connection lives on after its set-up: calls keep working and
// the manager never waits to reconnect.
func TestSSEConnectionOutlivesItsSetUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := NewManager([]ServerConfig{{Name: "sse", URL: sseServer(t, false), Transport: TransportSSE}}, Options{}, testLogger())
	var mu sync.Mutex
	reconnects := 0
	m.sleep = func(ctx context.Context, d time.Duration) bool {
		mu.Lock()
		reconnects++
		mu.Unlock()
		return sleep(ctx, d)
	}
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	require.NoError(t, m.WaitReady(ctx))

	for i := range 5 {
		res, err := m.CallTool(ctx, "sse", "progress", map[string]any{}, nil)
		require.NoError(t, err, "call %d", i)
		assert.Equal(t, "done", Observation(res))
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Zero(t, reconnects, "the connection was never dropped")
}
