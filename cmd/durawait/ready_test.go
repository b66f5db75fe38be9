package main

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/mcpfront"
	"github.com/durawait/durawait/worker/downstream"
)

// lazyClient is a Temporal client that connects only when used.
func lazyClient(t *testing.T) client.Client {
	t.Helper()
	tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	return tc
}

// An HTTP front end is ready only once /mcp is routed: a front end whose
// authentication does not set up never says ready, on /readyz or /healthz.
func TestAFrontIsReadyOnlyOnceMCPIsRouted(t *testing.T) {
	p := newProcess(roles{front: true}, config.Config{TaskQueue: "q", Auth: config.Auth{TokensFile: filepath.Join(t.TempDir(), "missing.toml")}}, io.Discard)
	p.temporal = lazyClient(t)
	p.http = &httpSide{shutdown: func() {}}
	p.front = mcpfront.New(mcpfront.Options{TaskQueue: "q"})
	err := p.serve(t.Context(), nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.toml", "the tokens file does not load")
	assert.Equal(t, "starting", p.ready.Report(t.Context()).Status, "no checks before /mcp is routed")
	assert.False(t, p.health.ready.Load())
}

// A worker alone serves only /healthz: serve marks it ready with the
// worker's downstream servers, for /healthz and the availability gauge,
// until ctx ends; then /readyz drains.
func TestAWorkerIsReadyUntilItsEnd(t *testing.T) {
	p := newProcess(roles{worker: true}, config.Config{TaskQueue: "q"}, io.Discard)
	p.temporal = lazyClient(t)
	p.target = temporalTarget{addr: "temporal.example:7233"}
	manager := downstream.NewManager([]downstream.ServerConfig{{Name: "demo"}}, downstream.Options{}, quietLogger())
	p.worker = &workerSide{manager: manager}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- p.serve(ctx, nil, nil) }()
	require.Eventually(t, p.health.ready.Load, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, "temporal.example:7233", p.health.engine)
	status := p.availability.Load()
	require.NotNil(t, status, "the gauge reads the worker's servers")
	assert.Contains(t, (*status)(), "demo")

	cancel()
	require.NoError(t, <-served)
	assert.Equal(t, "draining", p.ready.Report(t.Context()).Status)
}
