package telemetry

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// scrape is p's Prometheus exposition.
func scrape(t *testing.T, p *Providers) string {
	t.Helper()
	srv := httptest.NewServer(p.PrometheusHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// The Temporal SDK's metrics: counters are monotonic (a Prometheus
// counter), timers land in second-scale buckets, and a metric the meter
// refuses is logged, not a panic.
func TestTemporalSDKMetrics(t *testing.T) {
	clearEnv(t)
	var logs bytes.Buffer
	p, err := New(context.Background(), Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	defer p.Shutdown(context.Background())
	opts, err := p.TemporalClient(client.Options{})
	require.NoError(t, err)
	h := opts.MetricsHandler
	h.Counter("temporal_request").Inc(2)
	h.Timer("temporal_request_latency").Record(1200 * time.Millisecond)
	assert.NotPanics(t, func() { h.Counter("not a valid name!").Inc(1) })
	assert.Contains(t, logs.String(), "a Temporal SDK metric could not be created")

	body := scrape(t, p)
	assert.Contains(t, body, "# TYPE temporal_request_total counter")
	assert.Contains(t, body, `temporal_request_latency_seconds_bucket{otel_scope_name="go.temporal.io/sdk",otel_scope_schema_url="",otel_scope_version="",le="1"} 0`)
	assert.Contains(t, body, `temporal_request_latency_seconds_bucket{otel_scope_name="go.temporal.io/sdk",otel_scope_schema_url="",otel_scope_version="",le="2.5"} 1`)
}

// Only the W3C trace context goes into a workflow's header (no caller
// baggage into its history), and queries are not traced.
func TestTemporalTracingCarriesTraceContextOnly(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	p, err := New(context.Background(), Options{Console: io.Discard})
	require.NoError(t, err)
	defer p.Shutdown(context.Background())
	opts := temporalTracerOptions(p)
	assert.True(t, opts.DisableQueryTracing)
	tracer, err := temporalotel.NewTracer(opts)
	require.NoError(t, err)

	member, err := baggage.NewMember("user", "secret")
	require.NoError(t, err)
	bag, err := baggage.New(member)
	require.NoError(t, err)
	ctx, span := p.TracerProvider.Tracer("t").Start(baggage.ContextWithBaggage(context.Background(), bag), "call")
	defer span.End()
	header, err := tracer.MarshalSpan(tracer.SpanFromContext(ctx))
	require.NoError(t, err)
	assert.Contains(t, header, "traceparent")
	for k, v := range header {
		assert.NotContains(t, k+v, "secret", "no baggage in the header")
	}
}
