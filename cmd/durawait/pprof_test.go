package main

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/internal/config"
)

// --pprof serves Go's profiler on its own loopback listener; without it
// nothing listens.
func TestPprofServesTheProfilerOnItsOwnListener(t *testing.T) {
	p := &process{cfg: config.Config{Pprof: "127.0.0.1:0"}, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	stop, err := p.startPprof(t.Context())
	require.NoError(t, err)
	defer stop()
	resp, err := http.Get("http://" + p.pprofAddr + "/debug/pprof/goroutine?debug=1")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "goroutine profile:")

	off := &process{logger: p.logger}
	stop, err = off.startPprof(t.Context())
	require.NoError(t, err)
	assert.Nil(t, stop)
	assert.Empty(t, off.pprofAddr)
}

func TestPprofMustBeOnLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "10.1.2.3:6060", "nonsense"} {
		_, err := configFrom([]string{"--data-dir", t.TempDir(), "--pprof", addr})
		require.Error(t, err, addr)
		assert.Contains(t, err.Error(), "pprof: must be a loopback address", addr)
	}
	cfg, err := configFrom([]string{"--data-dir", t.TempDir(), "--pprof", "localhost:6060"})
	require.NoError(t, err)
	assert.Equal(t, "localhost:6060", cfg.Pprof)
}
