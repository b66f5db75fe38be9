package telemetry

import (
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/propagation"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// InstrumentationName names durawait's tracers and meters.
const InstrumentationName = "github.com/durawait/durawait"

// TemporalSDKScope names the Temporal SDK's tracer and meter.
const TemporalSDKScope = "go.temporal.io/sdk"

// TemporalClient adds the Temporal SDK's OpenTelemetry instrumentation to
// the options of a client dial: its metrics through the MeterProvider
// (counters as monotonic sums, histograms in second-scale buckets, a
// meter's error logged rather than the contrib's default panic), and, when
// traces are exported, the tracing interceptor, which the SDK also applies
// to every worker built on the client. That interceptor carries the
// caller's span into the workflow (in the workflow header), so the
// workflow's and its activities' spans are children of the tool call that
// started them.
func (p *Providers) TemporalClient(opts client.Options) (client.Options, error) {
	logger := p.logger
	if logger == nil {
		logger = slog.Default()
	}
	opts.MetricsHandler = temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:                p.MeterProvider.Meter(TemporalSDKScope),
		UseMonotonicCounters: true,
		OnError: func(err error) {
			logger.Warn("a Temporal SDK metric could not be created; it records nothing", "error", err)
		},
	})
	if !p.Settings.Traces.On() {
		return opts, nil
	}
	tracing, err := TemporalTracing(p)
	if err != nil {
		return client.Options{}, err
	}
	opts.Interceptors = append(opts.Interceptors, tracing)
	return opts, nil
}

// temporalTracerOptions are the tracing interceptor's options: queries are
// not traced (a front end without a worker queries the catalog every 3 s:
// some 29,000 traces a day), and only the W3C trace context goes into the
// workflow headers: a caller's baggage would be written into the
// workflow's history, readable by anyone who reads it.
func temporalTracerOptions(p *Providers) temporalotel.TracerOptions {
	return temporalotel.TracerOptions{
		Tracer:              p.TracerProvider.Tracer(TemporalSDKScope),
		TextMapPropagator:   propagation.TraceContext{},
		DisableBaggage:      true,
		DisableQueryTracing: true,
	}
}

// TemporalTracing is the Temporal SDK's tracing interceptor on p's tracer
// provider (temporalTracerOptions).
func TemporalTracing(p *Providers) (interceptor.Interceptor, error) {
	tracing, err := temporalotel.NewTracingInterceptor(temporalTracerOptions(p))
	if err != nil {
		return nil, fmt.Errorf("telemetry: Temporal tracing interceptor: %w", err)
	}
	return tracing, nil
}
