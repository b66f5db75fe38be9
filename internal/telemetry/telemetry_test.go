package telemetry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collectormetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collectortracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// env is a lookup over a fixed environment.
func env(kv ...string) LookupFunc {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestReadSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  LookupFunc
		want Settings
	}{
		{"nothing set: off", env(), Settings{}},
		{"an endpoint turns both signals on, over the default http/protobuf", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
			Settings{Traces: Signal{"otlp", ProtocolHTTPProtobuf, "http://c:4318"}, Metrics: Signal{"otlp", ProtocolHTTPProtobuf, "http://c:4318"}}},
		{"an exporter alone turns its signal on", env("OTEL_TRACES_EXPORTER", "otlp"),
			Settings{Traces: Signal{Exporter: "otlp", Protocol: ProtocolHTTPProtobuf}}},
		{"the protocol for every signal", env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_METRICS_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
			Settings{Traces: Signal{Exporter: "otlp", Protocol: ProtocolGRPC}, Metrics: Signal{Exporter: "otlp", Protocol: ProtocolGRPC}}},
		{"a signal's own protocol and endpoint win", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc",
			"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:4318/v1/metrics"),
			Settings{Traces: Signal{"otlp", ProtocolGRPC, "http://c:4317"}, Metrics: Signal{"otlp", ProtocolHTTPProtobuf, "http://m:4318/v1/metrics"}}},
		{"none turns a signal off", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318", "OTEL_METRICS_EXPORTER", "none"),
			Settings{Traces: Signal{"otlp", ProtocolHTTPProtobuf, "http://c:4318"}}},
		{"console needs no protocol", env("OTEL_TRACES_EXPORTER", "console", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
			Settings{Traces: Signal{Exporter: "console"}}},
		{"OTEL_SDK_DISABLED turns everything off", env("OTEL_SDK_DISABLED", "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318", EngineOptInEnv, "1"),
			Settings{Disabled: true}},
		{"the engine opts in", env("OTEL_TRACES_EXPORTER", "otlp", EngineOptInEnv, "true"),
			Settings{Traces: Signal{Exporter: "otlp", Protocol: ProtocolHTTPProtobuf}, Engine: true}},
		{"the engine's opt-in needs traces", env("OTEL_METRICS_EXPORTER", "otlp", EngineOptInEnv, "1"),
			Settings{Metrics: Signal{Exporter: "otlp", Protocol: ProtocolHTTPProtobuf}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadSettings(tc.env)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.want.Traces.Exporter != "", got.Traces.On())
		})
	}
}

func TestReadSettingsRefusesWhatItCannotHonour(t *testing.T) {
	for _, tc := range []struct {
		env  LookupFunc
		want string
	}{
		{env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"), `OTEL_EXPORTER_OTLP_PROTOCOL: must be grpc or http/protobuf (got "http/json")`},
		{env("OTEL_METRICS_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "udp"), `OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: must be grpc or http/protobuf (got "udp")`},
		{env("OTEL_TRACES_EXPORTER", "zipkin"), `OTEL_TRACES_EXPORTER: must be one of otlp, console or none (got "zipkin")`},
		{env("OTEL_TRACES_EXPORTER", "prometheus"), `OTEL_TRACES_EXPORTER: must be one of otlp, console or none`},
		{env("OTEL_METRICS_EXPORTER", "otlp,console"), `OTEL_METRICS_EXPORTER: one exporter only`},
		{env("OTEL_TRACES_EXPORTER", " otlp"), `OTEL_TRACES_EXPORTER: must be one of otlp, console or none (got " otlp")`},
		{env(EngineOptInEnv, "on"), EngineOptInEnv + `: must be 1 or 0`},
	} {
		_, err := ReadSettings(tc.env)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// clearEnv unsets every variable these tests set, for the test's duration.
func clearEnv(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", EngineOptInEnv} {
		t.Setenv(k, "")
	}
}

func TestNothingSetIsANoOpThatDialsNothing(t *testing.T) {
	clearEnv(t)
	p, err := New(context.Background(), Options{Version: "1.2.3"})
	require.NoError(t, err)
	defer p.Shutdown(context.Background())
	_, span := p.TracerProvider.Tracer("t").Start(context.Background(), "x")
	assert.False(t, span.IsRecording(), "a no-op tracer")
	assert.False(t, span.SpanContext().IsValid())
	exp, err := p.EngineSpanExporter(context.Background())
	require.NoError(t, err)
	assert.Nil(t, exp, "the engine exports nothing")
	assert.Len(t, p.shutdown, 1, "only the meter provider (for /metrics) runs")
}

// otlpReceiver receives OTLP over HTTP (/v1/traces, /v1/metrics) and gRPC,
// and keeps what it got.
type otlpReceiver struct {
	collectortracepb.UnimplementedTraceServiceServer
	mu      sync.Mutex
	traces  []*collectortracepb.ExportTraceServiceRequest
	metrics []*collectormetricpb.ExportMetricsServiceRequest
	// via records "http /v1/traces", "grpc traces"...
	via []string
}

func (r *otlpReceiver) Export(_ context.Context, req *collectortracepb.ExportTraceServiceRequest) (*collectortracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.traces = append(r.traces, req)
	r.via = append(r.via, "grpc traces")
	return &collectortracepb.ExportTraceServiceResponse{}, nil
}

// metricsService adapts the receiver to the metrics service (both have an
// Export method).
type metricsService struct {
	collectormetricpb.UnimplementedMetricsServiceServer
	r *otlpReceiver
}

func (m metricsService) Export(_ context.Context, req *collectormetricpb.ExportMetricsServiceRequest) (*collectormetricpb.ExportMetricsServiceResponse, error) {
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	m.r.metrics = append(m.r.metrics, req)
	m.r.via = append(m.r.via, "grpc metrics")
	return &collectormetricpb.ExportMetricsServiceResponse{}, nil
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch req.URL.Path {
	case "/v1/traces":
		var m collectortracepb.ExportTraceServiceRequest
		if proto.Unmarshal(body, &m) != nil {
			http.Error(w, "bad protobuf", http.StatusBadRequest)
			return
		}
		r.traces = append(r.traces, &m)
	case "/v1/metrics":
		var m collectormetricpb.ExportMetricsServiceRequest
		if proto.Unmarshal(body, &m) != nil {
			http.Error(w, "bad protobuf", http.StatusBadRequest)
			return
		}
		r.metrics = append(r.metrics, &m)
	default:
		http.NotFound(w, req)
		return
	}
	r.via = append(r.via, "http "+req.URL.Path)
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// spanNames are the names of the spans received, with their resource's
// service.name and service.version.
func (r *otlpReceiver) spanNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, req := range r.traces {
		for _, rs := range req.ResourceSpans {
			var svc, ver string
			for _, kv := range rs.Resource.Attributes {
				switch kv.Key {
				case "service.name":
					svc = kv.Value.GetStringValue()
				case "service.version":
					ver = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					out = append(out, svc+"@"+ver+" "+s.Name)
				}
			}
		}
	}
	return out
}

func (r *otlpReceiver) metricNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, req := range r.metrics {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					out = append(out, m.Name)
				}
			}
		}
	}
	return out
}

func (r *otlpReceiver) vias() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.via...)
}

// startReceivers serves r over HTTP and gRPC on loopback and returns both
// endpoints.
func startReceivers(t *testing.T, r *otlpReceiver) (httpURL, grpcURL string) {
	t.Helper()
	hs := httptest.NewServer(r)
	t.Cleanup(hs.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer()
	collectortracepb.RegisterTraceServiceServer(gs, r)
	collectormetricpb.RegisterMetricsServiceServer(gs, metricsService{r: r})
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return hs.URL, "http://" + ln.Addr().String()
}

// exercise records one span and one counter on p, then shuts p down, which
// flushes both.
func exercise(t *testing.T, p *Providers) {
	t.Helper()
	_, span := p.TracerProvider.Tracer("t").Start(context.Background(), "the-span")
	require.True(t, span.IsRecording())
	span.End()
	c, err := p.MeterProvider.Meter("t").Int64Counter("the.counter", metric.WithUnit("{x}"))
	require.NoError(t, err)
	c.Add(context.Background(), 3)
	require.NoError(t, p.Shutdown(context.Background()))
}

func TestExportOverOTLPHTTP(t *testing.T) {
	clearEnv(t)
	r := &otlpReceiver{}
	httpURL, _ := startReceivers(t, r)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", httpURL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	p, err := New(context.Background(), Options{Version: "1.2.3"})
	require.NoError(t, err)
	exercise(t, p)
	assert.ElementsMatch(t, []string{"http /v1/traces", "http /v1/metrics"}, r.vias())
	assert.Equal(t, []string{"durawait@1.2.3 the-span"}, r.spanNames())
	assert.Contains(t, r.metricNames(), "the.counter")
}

func TestExportOverOTLPGRPC(t *testing.T) {
	clearEnv(t)
	r := &otlpReceiver{}
	_, grpcURL := startReceivers(t, r)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", grpcURL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_SERVICE_NAME", "agents-gateway")
	p, err := New(context.Background(), Options{Version: "1.2.3"})
	require.NoError(t, err)
	exercise(t, p)
	assert.ElementsMatch(t, []string{"grpc traces", "grpc metrics"}, r.vias())
	assert.Equal(t, []string{"agents-gateway@1.2.3 the-span"}, r.spanNames(), "OTEL_SERVICE_NAME overrides the service name")
}

// Each signal's own protocol and endpoint: traces over gRPC, metrics over
// HTTP.
func TestEachSignalHasItsOwnProtocol(t *testing.T) {
	clearEnv(t)
	r := &otlpReceiver{}
	httpURL, grpcURL := startReceivers(t, r)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", grpcURL)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", httpURL+"/v1/metrics")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attributes")
	p, err := New(context.Background(), Options{Version: "9"})
	require.NoError(t, err)
	exercise(t, p)
	assert.ElementsMatch(t, []string{"grpc traces", "http /v1/metrics"}, r.vias())
	assert.Equal(t, []string{"from-attributes@9 the-span"}, r.spanNames())
}

func TestNoneExportsNothing(t *testing.T) {
	clearEnv(t)
	r := &otlpReceiver{}
	httpURL, _ := startReceivers(t, r)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", httpURL)
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	p, err := New(context.Background(), Options{})
	require.NoError(t, err)
	_, span := p.TracerProvider.Tracer("t").Start(context.Background(), "x")
	assert.False(t, span.IsRecording())
	c, err := p.MeterProvider.Meter("t").Int64Counter("the.counter")
	require.NoError(t, err)
	c.Add(context.Background(), 1)
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, []string{"http /v1/metrics"}, r.vias(), "metrics only")
}

func TestEngineSpansOnlyWhenOptedIn(t *testing.T) {
	clearEnv(t)
	r := &otlpReceiver{}
	httpURL, _ := startReceivers(t, r)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", httpURL)
	p, err := New(context.Background(), Options{})
	require.NoError(t, err)
	exp, err := p.EngineSpanExporter(context.Background())
	require.NoError(t, err)
	assert.Nil(t, exp)
	require.NoError(t, p.Shutdown(context.Background()))

	t.Setenv(EngineOptInEnv, "1")
	p, err = New(context.Background(), Options{})
	require.NoError(t, err)
	exp, err = p.EngineSpanExporter(context.Background())
	require.NoError(t, err)
	require.NotNil(t, exp)
	// The engine's spans reach the collector, over the protocol asked for.
	engine := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	_, span := engine.Tracer("engine").Start(context.Background(), "engine-span")
	span.End()
	require.NoError(t, engine.Shutdown(context.Background()))
	require.NoError(t, p.Shutdown(context.Background()))
	names := r.spanNames()
	require.Len(t, names, 1)
	assert.True(t, strings.HasSuffix(names[0], " engine-span"), names[0])
	assert.Contains(t, r.vias(), "http /v1/traces")
}

// An OTEL_SDK_DISABLED that is neither true nor false is warned about and
// read as false (the specification), not a refusal to start.
func TestAnUnrecognisedSDKDisabledIsWarnedAbout(t *testing.T) {
	s, err := ReadSettings(env("OTEL_SDK_DISABLED", "yes", "OTEL_TRACES_EXPORTER", "otlp"))
	require.NoError(t, err)
	assert.False(t, s.Disabled)
	assert.True(t, s.Traces.On())
	require.Len(t, s.Warnings, 1)
	assert.Contains(t, s.Warnings[0], `OTEL_SDK_DISABLED: must be true or false (got "yes"); read as false`)

	clearEnv(t)
	t.Setenv("OTEL_SDK_DISABLED", "1")
	var logs bytes.Buffer
	p, err := New(context.Background(), Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Contains(t, logs.String(), "OTEL_SDK_DISABLED")
}

// The console exporters write to the Console writer (stderr), never to
// stdout, which over stdio carries the MCP stream.
func TestConsoleExportersKeepOffStdout(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	t.Setenv("OTEL_METRICS_EXPORTER", "console")
	stdout, err := os.CreateTemp(t.TempDir(), "stdout")
	require.NoError(t, err)
	real := os.Stdout
	os.Stdout = stdout
	defer func() { os.Stdout = real }()

	var console bytes.Buffer
	p, err := New(context.Background(), Options{Console: &console})
	require.NoError(t, err)
	exercise(t, p)
	os.Stdout = real
	assert.Contains(t, console.String(), `"Name":"the-span"`)
	assert.Contains(t, console.String(), `"Name":"the.counter"`)
	written, err := os.ReadFile(stdout.Name())
	require.NoError(t, err)
	assert.Empty(t, written, "nothing on stdout")
}

// OpenTelemetry's errors go to the logger, at most once an interval, with
// the count of those not logged.
func TestOTelErrorsAreLoggedRateLimited(t *testing.T) {
	var logs bytes.Buffer
	now := time.Unix(1000, 0)
	l := newErrorLog(slog.New(slog.NewTextHandler(&logs, nil)), time.Minute, func() time.Time { return now })
	l.Handle(errors.New("export failed 1"))
	l.Handle(errors.New("export failed 2"))
	l.Handle(errors.New("export failed 3"))
	now = now.Add(time.Minute)
	l.Handle(errors.New("export failed 4"))
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 2, logs.String())
	assert.Contains(t, lines[0], "export failed 1")
	assert.Contains(t, lines[0], "errors_not_logged=0")
	assert.Contains(t, lines[1], "export failed 4")
	assert.Contains(t, lines[1], "errors_not_logged=2")
}

func TestPrometheusHandlerShowsTheMetrics(t *testing.T) {
	clearEnv(t)
	p, err := New(context.Background(), Options{Version: "1"})
	require.NoError(t, err)
	defer p.Shutdown(context.Background())
	c, err := p.MeterProvider.Meter("t").Int64Counter("durawait.waits.started", metric.WithUnit("{wait}"))
	require.NoError(t, err)
	c.Add(context.Background(), 2)
	srv := httptest.NewServer(p.PrometheusHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var line string
	for l := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(l, "durawait_waits_started_total{") {
			line = l
		}
	}
	require.NotEmpty(t, line, "%s", body)
	assert.True(t, strings.HasSuffix(line, " 2"), line)
}
