package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/internal/datadir"
)

// `durawait waits` through a data dir uses the namespace the owning
// durawait serves (serve --namespace X), not the default.
func TestWaitsEngineReadsTheOwnersNamespace(t *testing.T) {
	dir := t.TempDir()
	lock, err := datadir.Acquire(dir, datadir.Owner{PID: 1, Engine: "127.0.0.1:7233", Namespace: "team-x", StartedAt: time.Now()})
	require.NoError(t, err)
	t.Cleanup(lock.Release)
	cfg := config.Default()
	cfg.DataDir = dir
	addr, ns, err := waitsEngine(cfg)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:7233", addr)
	assert.Equal(t, "team-x", ns)

	cfg.Temporal = "temporal.example:7233"
	addr, ns, err = waitsEngine(cfg)
	require.NoError(t, err)
	assert.Equal(t, "temporal.example:7233", addr)
	assert.Empty(t, ns, "--temporal: the --namespace flag's")
}
