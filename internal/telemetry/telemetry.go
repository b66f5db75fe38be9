// Package telemetry builds durawait's OpenTelemetry providers from the
// standard OTEL_* environment: traces and metrics over OTLP (gRPC or HTTP,
// as OTEL_EXPORTER_OTLP_PROTOCOL and its per-signal variants say), and a
// Prometheus exposition of the metrics that is always on. With no OTEL_*
// variable set, tracing is a no-op and nothing is dialled. The providers
// are passed explicitly to whoever records; only the W3C propagator is set
// process-wide. See docs/observability.md.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// ServiceName is the default service.name of durawait's telemetry;
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES override it.
const ServiceName = "durawait"

// Options configure New.
type Options struct {
	// Version is the service.version resource attribute.
	Version string
	// Lookup reads the environment; os.LookupEnv when nil. The exporters
	// themselves read the process environment (their endpoints, headers,
	// timeouts), so a Lookup other than the process's is for tests of
	// the settings alone.
	Lookup LookupFunc
	// Logger receives the settings' warnings, the errors OpenTelemetry
	// reports (export failures; otel.SetErrorHandler, rate-limited) and
	// the Temporal SDK metrics' errors; slog.Default() when nil.
	Logger *slog.Logger
	// Console is where the console exporters write; os.Stderr when nil.
	// Never os.Stdout: over stdio it carries the MCP stream.
	Console io.Writer
}

// Providers are durawait's telemetry providers.
type Providers struct {
	// Settings are what the environment asked for.
	Settings Settings
	// TracerProvider records spans: a no-op when traces are off.
	TracerProvider trace.TracerProvider
	// MeterProvider records metrics; always an SDK provider, read by the
	// Prometheus handler and, when metrics are exported, by the exporter.
	MeterProvider metric.MeterProvider
	// Propagator is W3C trace context and baggage.
	Propagator propagation.TextMapPropagator
	// Resource describes this process (service.name, service.version).
	Resource *resource.Resource

	prometheus http.Handler
	shutdown   []func(context.Context) error
	logger     *slog.Logger
}

// New builds the providers the environment asks for, sets the
// process-wide propagator to W3C trace context and baggage, and routes
// OpenTelemetry's own errors (a failed export, say) to the logger.
func New(ctx context.Context, opts Options) (*Providers, error) {
	lookup := opts.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	console := opts.Console
	if console == nil {
		console = os.Stderr
	}
	settings, err := ReadSettings(lookup)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	for _, w := range settings.Warnings {
		logger.Warn("telemetry: " + w)
	}
	res, err := newResource(ctx, opts.Version)
	if err != nil {
		return nil, err
	}
	p := &Providers{
		Settings:   settings,
		Resource:   res,
		Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		logger:     logger,
	}
	otel.SetTextMapPropagator(p.Propagator)
	otel.SetErrorHandler(newErrorLog(logger, errorLogInterval, time.Now))

	p.TracerProvider = tracenoop.NewTracerProvider()
	if settings.Traces.On() {
		exp, err := newSpanExporter(ctx, settings.Traces, console)
		if err != nil {
			return nil, fmt.Errorf("telemetry: trace exporter: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		p.TracerProvider = tp
		p.shutdown = append(p.shutdown, tp.Shutdown)
	}

	registry := prometheus.NewRegistry()
	// The process's own: go_* (goroutines, GC, memory) and process_* (CPU,
	// resident memory, open files), as every Go service exposes them.
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	promReader, err := otelprom.New(otelprom.WithRegisterer(registry))
	if err != nil {
		_ = p.Shutdown(ctx)
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	p.prometheus = promhttp.HandlerFor(registry, promhttp.HandlerOpts{})
	mopts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(promReader), sdkmetric.WithView(temporalSDKStreams)}
	if settings.Metrics.On() {
		reader, err := newMetricReader(ctx, settings.Metrics, console)
		if err != nil {
			_ = p.Shutdown(ctx)
			return nil, fmt.Errorf("telemetry: metric exporter: %w", err)
		}
		mopts = append(mopts, sdkmetric.WithReader(reader))
	}
	mp := sdkmetric.NewMeterProvider(mopts...)
	p.MeterProvider = mp
	p.shutdown = append(p.shutdown, mp.Shutdown)
	return p, nil
}

// newResource is service.name=durawait and the version, overridden by
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
func newResource(ctx context.Context, version string) (*resource.Resource, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(
			attribute.String("service.name", ServiceName),
			attribute.String("service.version", version),
		),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	return res, nil
}

// EngineSpanExporter is the exporter of the embedded Temporal engine's own
// spans: nil (the engine exports nothing) unless DURAWAIT_ENGINE_OTEL
// opts in and traces are exported; then an exporter of its own, built
// like durawait's, so it honours the protocol too. The engine shuts it
// down when it stops.
func (p *Providers) EngineSpanExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	if !p.Settings.Engine {
		return nil, nil
	}
	exp, err := newSpanExporter(ctx, p.Settings.Traces, os.Stderr)
	if err != nil {
		return nil, fmt.Errorf("telemetry: engine trace exporter: %w", err)
	}
	return exp, nil
}

// newSpanExporter is the exporter signal names: console writes to console
// (stdouttrace, one JSON span a line), anything else is autoexport's.
// autoexport's own console exporter writes to os.Stdout, which over stdio
// is the MCP stream.
func newSpanExporter(ctx context.Context, signal Signal, console io.Writer) (sdktrace.SpanExporter, error) {
	if signal.Exporter == "console" {
		exp, err := stdouttrace.New(stdouttrace.WithWriter(console))
		if err != nil {
			return nil, fmt.Errorf("console: %w", err)
		}
		return exp, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", signal.Exporter, err)
	}
	return exp, nil
}

// newMetricReader is the reader signal names: console writes to console
// every export interval (OTEL_METRIC_EXPORT_INTERVAL), anything else is
// autoexport's (see newSpanExporter).
func newMetricReader(ctx context.Context, signal Signal, console io.Writer) (sdkmetric.Reader, error) {
	if signal.Exporter == "console" {
		exp, err := stdoutmetric.New(stdoutmetric.WithWriter(console))
		if err != nil {
			return nil, fmt.Errorf("console: %w", err)
		}
		return sdkmetric.NewPeriodicReader(exp), nil
	}
	r, err := autoexport.NewMetricReader(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", signal.Exporter, err)
	}
	return r, nil
}

// temporalSDKBuckets are the bucket boundaries of the Temporal SDK's
// histograms (its timers, recorded in seconds: request and task
// latencies): the default boundaries {0, 5, 10, 25, ..., 10000} are made
// for milliseconds and would put nearly every latency in the first bucket.
var temporalSDKBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// temporalSDKStreams shapes the instruments of the Temporal SDK
// (TemporalSDKScope): second-scale buckets for its histograms
// (temporalSDKBuckets), and a description for every instrument, which the
// SDK makes with none: the Prometheus exposition's help text, without
// which `promtool check metrics` fails ("no help text"). One view for
// both: an instrument two views match is exported twice.
func temporalSDKStreams(i sdkmetric.Instrument) (sdkmetric.Stream, bool) {
	if i.Scope.Name != TemporalSDKScope {
		return sdkmetric.Stream{}, false
	}
	s := sdkmetric.Stream{Name: i.Name, Description: i.Description, Unit: i.Unit}
	if s.Description == "" {
		s.Description = "Temporal SDK metric " + i.Name + " (https://docs.temporal.io/references/sdk-metrics)"
	}
	if i.Kind == sdkmetric.InstrumentKindHistogram {
		s.Aggregation = sdkmetric.AggregationExplicitBucketHistogram{Boundaries: temporalSDKBuckets}
	}
	return s, true
}

// errorLogInterval is how often OpenTelemetry's errors are logged at most.
const errorLogInterval = time.Minute

// errorLog is OpenTelemetry's error handler: it logs an error at most once
// an interval (an unreachable collector fails every export), with the
// number of errors not logged since the last line.
type errorLog struct {
	logger   *slog.Logger
	interval time.Duration
	now      func() time.Time

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func newErrorLog(logger *slog.Logger, interval time.Duration, now func() time.Time) *errorLog {
	return &errorLog{logger: logger, interval: interval, now: now}
}

// Handle implements otel.ErrorHandler.
func (l *errorLog) Handle(err error) {
	l.mu.Lock()
	now := l.now()
	if !l.last.IsZero() && now.Sub(l.last) < l.interval {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := l.suppressed
	l.last, l.suppressed = now, 0
	l.mu.Unlock()
	l.logger.Warn("OpenTelemetry error (export failed?)", "error", err, "errors_not_logged", suppressed, "logged_at_most_every", l.interval.String())
}

// PrometheusHandler serves the metrics in the Prometheus text format.
func (p *Providers) PrometheusHandler() http.Handler { return p.prometheus }

// Shutdown flushes what is buffered to the exporters and stops them.
func (p *Providers) Shutdown(ctx context.Context) error {
	var errs []error
	for i := len(p.shutdown) - 1; i >= 0; i-- {
		if err := p.shutdown[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	p.shutdown = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry: shutdown: %w", err)
	}
	return nil
}
