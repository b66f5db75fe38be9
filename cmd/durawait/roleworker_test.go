package main

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/internal/datadir"
)

// hostFree reports whether the data dir's host lock is free (and leaves
// it so).
func hostFree(t *testing.T, dir string) bool {
	t.Helper()
	lock, err := datadir.AcquireHost(dir)
	if err != nil {
		var inUse *datadir.HostInUseError
		require.True(t, errors.As(err, &inUse), "%v", err)
		return false
	}
	lock.Release()
	return true
}

// startWorker needs dialTemporal's client. It fills p.worker: the host it
// holds (the data dir's host lock, until its stop), the downstream
// servers' manager, the activities' downstream and the in-process feed.
func TestStartWorkerFillsTheWorkersSide(t *testing.T) {
	f := startFakeTemporal(t)
	p := dialed(t, clusterProcess(t, f, roles{worker: true}))
	stop, err := p.startWorker(t.Context())
	require.NoError(t, err)
	require.NotNil(t, stop)
	require.NotNil(t, p.worker)
	host, err := hostID(p.cfg)
	require.NoError(t, err)
	assert.Equal(t, host, p.worker.host)
	require.NotNil(t, p.worker.manager)
	require.NotNil(t, p.worker.downstream)
	assert.Same(t, p.worker.manager, p.worker.downstream.Servers)
	assert.Empty(t, p.worker.downstream.TmuxHostQueue, "no tmux tool enabled")
	assert.NotNil(t, p.worker.hub)
	assert.False(t, hostFree(t, p.cfg.DataDir), "the worker holds its host")

	stop()
	assert.True(t, hostFree(t, p.cfg.DataDir), "the stop let the host go")
}

// A host another worker holds fails the step, which fills nothing.
func TestStartWorkerOnAHostInUse(t *testing.T) {
	f := startFakeTemporal(t)
	p := dialed(t, clusterProcess(t, f, roles{worker: true}))
	other, err := datadir.AcquireHost(p.cfg.DataDir)
	require.NoError(t, err)
	defer other.Release()
	stop, err := p.startWorker(t.Context())
	var inUse *datadir.HostInUseError
	require.True(t, errors.As(err, &inUse), "%v", err)
	assert.Nil(t, stop)
	assert.Nil(t, p.worker)
}

// A failure after the host is taken stops what the step started: the
// host is free again.
func TestStartWorkerStopsWhatItStartedOnAFailure(t *testing.T) {
	f := startFakeTemporal(t)
	p := dialed(t, clusterProcess(t, f, roles{worker: true}))
	p.cfg.TaskQueue = "" // worker.New refuses it, after the host is taken
	stop, err := p.startWorker(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "task queue")
	assert.Nil(t, stop)
	assert.Nil(t, p.worker)
	assert.True(t, hostFree(t, p.cfg.DataDir), "the host lock was released")
}

// takeHost holds the host until release; host.id names it when set.
func TestTakeHostHoldsItUntilRelease(t *testing.T) {
	cfg := stepConfig(t)
	host, release, err := takeHost(cfg)
	require.NoError(t, err)
	want, err := hostID(cfg)
	require.NoError(t, err)
	assert.Equal(t, want, host)
	_, _, err = takeHost(cfg)
	require.Error(t, err, "one worker per data dir")
	release()
	assert.True(t, hostFree(t, cfg.DataDir))

	cfg.Host.ID = "h-1"
	host, release, err = takeHost(cfg)
	require.NoError(t, err)
	defer release()
	assert.Equal(t, "h-1", host)
}

func TestTmuxQueueOnlyWithATmuxTool(t *testing.T) {
	assert.Empty(t, tmuxQueueOf(stepConfig(t)))
	for _, tool := range []string{"list_panes", "wait_for_text"} {
		cfg := stepConfig(t, "--tool", tool)
		assert.Equal(t, tmuxHostQueue(cfg), tmuxQueueOf(cfg), tool)
	}
}
