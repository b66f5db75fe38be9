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
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
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
}

// New builds the providers the environment asks for and sets the
// process-wide propagator to W3C trace context and baggage.
func New(ctx context.Context, opts Options) (*Providers, error) {
	lookup := opts.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	settings, err := ReadSettings(lookup)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	res, err := newResource(ctx, opts.Version)
	if err != nil {
		return nil, err
	}
	p := &Providers{
		Settings:   settings,
		Resource:   res,
		Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	otel.SetTextMapPropagator(p.Propagator)

	p.TracerProvider = tracenoop.NewTracerProvider()
	if settings.Traces.On() {
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, fmt.Errorf("telemetry: trace exporter: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		p.TracerProvider = tp
		p.shutdown = append(p.shutdown, tp.Shutdown)
	}

	registry := prometheus.NewRegistry()
	promReader, err := otelprom.New(otelprom.WithRegisterer(registry))
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	p.prometheus = promhttp.HandlerFor(registry, promhttp.HandlerOpts{})
	mopts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(promReader)}
	if settings.Metrics.On() {
		reader, err := autoexport.NewMetricReader(ctx)
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
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("telemetry: engine trace exporter: %w", err)
	}
	return exp, nil
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
