package main

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// get is the status of a GET of url.
func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// listenHTTP needs nothing of the steps before it (the telemetry, when
// there, serves /metrics). It fills p.http: /healthz answers 503 at once,
// /mcp and /events (a front end's only) hold a request until the front
// end is in place, and its stop closes the listener.
func TestListenHTTPServesHealthAtOnce(t *testing.T) {
	for _, front := range []bool{true, false} {
		p := newProcess(roles{front: front, worker: !front}, stepConfig(t, "--http", "127.0.0.1:0"), io.Discard)
		stop, err := p.listenHTTP(t.Context())
		require.NoError(t, err)
		require.NotNil(t, p.http)
		base := "http://" + p.http.addr
		assert.Equal(t, base+"/mcp", p.http.mcpURL)
		assert.Equal(t, p.http.mcpURL, p.mcpURL())

		assert.Equal(t, http.StatusServiceUnavailable, get(t, base+"/healthz"), "starting")
		assert.Equal(t, http.StatusNotFound, get(t, base+"/metrics"), "no telemetry started")
		if front {
			assert.Equal(t, startingHoldWithin(time.Duration(p.cfg.HTTPReadTimeoutSec)*time.Second), p.mcpRoute.hold)
			// A start given up answers the held requests 503 at once.
			p.abandonStartingRoutes()
			assert.Equal(t, http.StatusServiceUnavailable, get(t, base+"/mcp"))
			assert.Equal(t, http.StatusServiceUnavailable, get(t, base+"/events"))
		} else {
			assert.Equal(t, http.StatusNotFound, get(t, base+"/mcp"), "a worker serves no MCP")
		}

		stop()
		_, err = http.Get(base + "/healthz")
		assert.Error(t, err, "the stop closed the listener")
		p.http.shutdown() // serve's call and the stop's are one
	}
}

// With the telemetry started before it, /metrics is the Prometheus
// exposition.
func TestListenHTTPServesTheTelemetrysMetrics(t *testing.T) {
	clearOTelEnv(t)
	p := newProcess(roles{worker: true}, stepConfig(t, "--http", "127.0.0.1:0"), io.Discard)
	stopTelemetry, err := p.startTelemetry(t.Context())
	require.NoError(t, err)
	defer stopTelemetry()
	stop, err := p.listenHTTP(t.Context())
	require.NoError(t, err)
	defer stop()
	assert.Equal(t, http.StatusOK, get(t, "http://"+p.http.addr+"/metrics"))
}

// An address in use fails the step, naming the flag that changes it, and
// fills nothing.
func TestListenHTTPOnATakenAddressNamesTheFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	p := newProcess(roles{front: true}, stepConfig(t, "--http", ln.Addr().String()), io.Discard)
	stop, err := p.listenHTTP(t.Context())
	require.Error(t, err)
	assert.Nil(t, stop)
	assert.Contains(t, err.Error(), "listen on "+ln.Addr().String())
	assert.Contains(t, err.Error(), "run with --http HOST:PORT")
	assert.Nil(t, p.http)
}
