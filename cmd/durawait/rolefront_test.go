package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/internal/samplehub"
	"github.com/durawait/durawait/worker/downstream"
)

// A front end without a worker in its process reaches the workers through
// Temporal: startFront fills p.front and polls the workers' catalog until
// its stop.
func TestStartFrontAloneWatchesTheCatalog(t *testing.T) {
	f := startFakeTemporal(t)
	p := dialed(t, clusterProcess(t, f, roles{front: true}))
	stop, err := p.startFront(t.Context())
	require.NoError(t, err)
	require.NotNil(t, stop, "the catalog watch")
	require.NotNil(t, p.front)
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the catalog watch did not stop")
	}
}

// With a worker in the process, startFront needs startWorker's side: the
// front end reads the worker's catalog directly, and refreshes it when a
// downstream server changes (here: one that cannot be reached).
func TestStartFrontWithAWorkerFollowsItsServers(t *testing.T) {
	f := startFakeTemporal(t)
	p := dialed(t, clusterProcess(t, f, roles{worker: true, front: true}))
	manager := downstream.NewManager([]downstream.ServerConfig{{Name: "down", URL: "http://127.0.0.1:1/mcp"}}, downstream.Options{}, quietLogger())
	p.worker = &workerSide{host: "h-1", manager: manager, downstream: &activities.Downstream{Servers: manager}, hub: samplehub.New()}
	stop, err := p.startFront(t.Context())
	require.NoError(t, err)
	assert.Nil(t, stop, "nothing runs beside it")
	require.NotNil(t, p.front)
	assert.NotContains(t, p.front.DownstreamStatus()["down"], "unavailable", "not tried yet")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go manager.Run(ctx)
	assert.Eventually(t, func() bool { return strings.HasPrefix(p.front.DownstreamStatus()["down"], "unavailable: ") },
		10*time.Second, 20*time.Millisecond, "the front end refreshed when the server's state changed")
}
