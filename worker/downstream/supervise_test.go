package downstream

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/activities"
)

// sleepRecorder stands in for Manager.sleep: it notes each delay the
// supervisor would wait, returns at once, and ends the manager's context
// after the n-th.
type sleepRecorder struct {
	n      int
	cancel context.CancelFunc

	mu     sync.Mutex
	delays []time.Duration
}

func (r *sleepRecorder) sleep(ctx context.Context, d time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delays = append(r.delays, d)
	if len(r.delays) == r.n {
		r.cancel()
	}
	return ctx.Err() == nil
}

func (r *sleepRecorder) recorded() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.delays)
}

// connectionLives stands in for Manager.now: the supervisor reads the time
// when a connection is up and when it has ended, and each connection appears
// to have lived the next of lives (the last one repeats).
type connectionLives struct {
	lives []time.Duration

	mu    sync.Mutex
	reads int
	at    time.Time
}

func (c *connectionLives) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	if c.reads%2 == 0 {
		c.at = c.at.Add(c.lives[min(c.reads/2-1, len(c.lives)-1)])
	}
	return c.at
}

// assertBackoff checks that delays[i] is MinBackoff·2^steps[i] within the
// ±20 % jitter.
func assertBackoff(t *testing.T, minBackoff time.Duration, steps []int, delays []time.Duration) {
	t.Helper()
	require.Len(t, delays, len(steps))
	for i, step := range steps {
		interval := minBackoff << step
		assert.InDelta(t, float64(interval), float64(delays[i]), float64(interval)*retryJitter,
			"delay %d is the interval %v ±20 %%: %v", i, interval, delays)
	}
}

func toolNames(t *testing.T, m *Manager, server string) []string {
	t.Helper()
	tools, _, err := m.ServerTools(server)
	require.NoError(t, err, "connected")
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	return names
}

// awaitConnected takes change notifications until server is connected and
// returns how many it took.
func awaitConnected(t *testing.T, ctx context.Context, m *Manager, ch <-chan struct{}, server, what string) int {
	t.Helper()
	for n := 1; ; n++ {
		await(t, ctx, ch, what)
		if _, _, err := m.ServerTools(server); err == nil {
			return n
		}
	}
}

func await(t *testing.T, ctx context.Context, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatalf("%s: %v", what, ctx.Err())
	}
}

// A server whose process dies is started again, and its tools are listed
// again from the new process.
func TestDeadServerIsReconnectedAndListedAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := NewManager([]ServerConfig{stdioServer(t, "mortal")}, Options{MinBackoff: 100 * time.Millisecond}, testLogger())
	sleeps := &sleepRecorder{n: -1, cancel: cancel}
	m.sleep = sleeps.sleep
	changed := make(chan struct{}, 10)
	m.OnChanged(func() { changed <- struct{}{} })
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	require.NoError(t, m.WaitReady(ctx))
	awaitConnected(t, ctx, m, changed, "mortal", "first tool list")
	assert.Contains(t, toolNames(t, m, "mortal"), "gen1")

	_, err := m.CallTool(ctx, "mortal", "die", map[string]any{}, nil)
	require.Error(t, err, "the process exits without answering")
	assert.GreaterOrEqual(t, awaitConnected(t, ctx, m, changed, "mortal", "tool list of the restarted server"), 2,
		"one change when the server went down, one when it came back")

	names := toolNames(t, m, "mortal")
	assert.Contains(t, names, "gen2", "listed by the second process")
	assert.NotContains(t, names, "gen1")
	res, err := m.CallTool(ctx, "mortal", "gen2", map[string]any{}, nil)
	require.NoError(t, err)
	assert.Equal(t, "ok", Observation(res))
	assertBackoff(t, 100*time.Millisecond, []int{0}, sleeps.recorded())
}

// Attempts that fail to connect are spaced by growing delays, and calls
// meanwhile fail at once naming the server.
func TestFailedConnectsBackOffWithGrowingDelays(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	missing := ServerConfig{Name: "absent", Command: []string{filepath.Join(t.TempDir(), "no-such-server")}}
	m := NewManager([]ServerConfig{missing}, Options{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Hour}, testLogger())
	sleeps := &sleepRecorder{n: 5, cancel: cancel}
	m.sleep = sleeps.sleep
	m.Run(ctx) // returns once the fifth delay ended the manager's context

	assertBackoff(t, 100*time.Millisecond, []int{0, 1, 2, 3, 4}, sleeps.recorded())
	_, _, lastErr := m.ServerTools("absent")
	require.Error(t, lastErr)
	_, err := m.CallTool(context.Background(), "absent", "any", map[string]any{}, nil)
	var unavailable *activities.UnavailableError
	require.True(t, errors.As(err, &unavailable), "got %v", err)
	assert.Equal(t, "absent", unavailable.Server)
}

// Connections that die young back off like failed attempts; one that stayed
// up for StableAfter (30 s by default) starts the backoff over.
func TestHealthyConnectionResetsTheBackoff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := NewManager([]ServerConfig{stdioServer(t, "flaky")},
		Options{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Hour}, testLogger())
	lives := &connectionLives{lives: []time.Duration{
		time.Second, time.Second, time.Second, 30 * time.Second, time.Second,
	}}
	m.now = lives.now
	sleeps := &sleepRecorder{n: 5, cancel: cancel}
	m.sleep = sleeps.sleep
	changed := make(chan struct{}, 10)
	m.OnChanged(func() { changed <- struct{}{} })
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()

	for i := range 5 {
		awaitConnected(t, ctx, m, changed, "flaky", fmt.Sprintf("connection %d", i+1))
		_, err := m.CallTool(ctx, "flaky", "die", map[string]any{}, nil)
		require.Error(t, err)
	}
	<-done // the fifth delay ended the manager's context

	assertBackoff(t, 100*time.Millisecond, []int{0, 1, 2, 0, 1}, sleeps.recorded())
}

// A connection lost while it is being set up, before it is the server's
// current one, is noticed at once, not at the next health check: the server
// drops every SSE stream right after it carried the tool list, and health
// checks are an hour apart.
func TestConnectionLostDuringSetUpIsNoticed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := NewManager([]ServerConfig{{Name: "flappy", URL: sseServer(t, true), Transport: TransportSSE}},
		Options{HealthInterval: time.Hour, MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Hour, StableAfter: time.Hour},
		testLogger())
	sleeps := &sleepRecorder{n: 3, cancel: cancel}
	m.sleep = sleeps.sleep
	m.Run(ctx)

	require.ErrorIs(t, ctx.Err(), context.Canceled, "every lost connection was noticed before the test's deadline")
	assertBackoff(t, 100*time.Millisecond, []int{0, 1, 2}, sleeps.recorded())
}
