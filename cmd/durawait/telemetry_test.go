package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clearOTelEnv unsets the OTEL_* variables, for the test's duration.
func clearOTelEnv(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "DURAWAIT_ENGINE_OTEL"} {
		t.Setenv(k, "")
	}
}

// newTelemetryProcess is a process with its telemetry started.
func newTelemetryProcess(t *testing.T) *process {
	t.Helper()
	clearOTelEnv(t)
	p := &process{logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	stop, err := p.startTelemetry(t.Context())
	require.NoError(t, err)
	t.Cleanup(stop)
	return p
}

// scrapeHandler is the /metrics exposition of p.
func scrapeHandler(t *testing.T, p *process) string {
	t.Helper()
	rec := httptest.NewRecorder()
	p.metricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.String()
}

// The availability gauge reads only the status serve set, once the roles
// started; scrapes during the start read nothing (and race with nothing).
func TestDownstreamGaugeWaitsForTheRoles(t *testing.T) {
	p := newTelemetryProcess(t)
	var scrapes sync.WaitGroup
	for range 4 {
		scrapes.Go(func() { scrapeHandler(t, p) })
	}
	assert.NotContains(t, scrapeHandler(t, p), "durawait_downstream_available")
	status := func() map[string]string { return map[string]string{"demo": "connected", "down": "unavailable"} }
	p.availability.Store(&status)
	scrapes.Wait()
	body := scrapeHandler(t, p)
	assert.Contains(t, body, `server="demo"} 1`)
	assert.Contains(t, body, `server="down"} 0`)
}

// otelhttp's metrics name the listener, not the Host header a caller sent.
func TestHTTPMetricsNameTheListenerNotTheHostHeader(t *testing.T) {
	p := newTelemetryProcess(t)
	p.http = &httpSide{addr: "127.0.0.1:8765"}
	h := p.traced(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for _, host := range []string{"evil-1.example:1111", "evil-2.example:2222"} {
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.Host = host
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	body := scrapeHandler(t, p)
	var lines []string
	for l := range strings.SplitSeq(body, "\n") {
		if strings.HasPrefix(l, "http_server_request_duration_seconds_count") {
			lines = append(lines, l)
		}
	}
	require.Len(t, lines, 1, "one series for both requests:\n%s", strings.Join(lines, "\n"))
	assert.Contains(t, lines[0], `server_address="127.0.0.1"`)
	assert.Contains(t, lines[0], `server_port="8765"`)
	assert.NotContains(t, body, "evil")
}
