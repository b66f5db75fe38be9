package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The daemon stops only once no request is in flight for the idle time and
// no wait runs.
func TestWatchIdleStopsOnlyWhenIdleAndNoWaitRuns(t *testing.T) {
	var a activity
	release := make(chan struct{})
	entered := make(chan struct{})
	srv := httptest.NewServer(a.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	})))
	defer srv.Close()
	go func() {
		resp, err := http.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-entered // a session's stream is open

	var runningChecks, waits atomic.Int64
	waits.Store(1)
	running := func(context.Context) (int64, error) {
		runningChecks.Add(1)
		return waits.Load(), nil
	}
	stopped := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go watchIdle(ctx, &a, 20*time.Millisecond, running, slog.New(slog.NewTextHandler(io.Discard, nil)), func() { close(stopped) })

	// While the request is in flight nobody even asks about waits.
	time.Sleep(100 * time.Millisecond)
	assert.Zero(t, runningChecks.Load(), "a connected client keeps the daemon up")
	close(release)

	// Idle, but a wait runs: still up, asked again and again.
	require.Eventually(t, func() bool { return runningChecks.Load() >= 3 }, 10*time.Second, 5*time.Millisecond)
	select {
	case <-stopped:
		t.Fatal("stopped while a wait runs")
	default:
	}
	waits.Store(0)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle daemon with no wait did not stop")
	}
}
