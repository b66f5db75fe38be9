package telemetry

import (
	"fmt"

	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// InstrumentationName names durawait's tracers and meters.
const InstrumentationName = "github.com/durawait/durawait"

// TemporalClient adds the Temporal SDK's OpenTelemetry instrumentation to
// the options of a client dial: its metrics through the MeterProvider,
// and, when traces are exported, the tracing interceptor, which the SDK
// also applies to every worker built on the client. That interceptor
// carries the caller's span into the workflow (in the workflow header),
// so the workflow's and its activities' spans are children of the tool
// call that started them.
func (p *Providers) TemporalClient(opts client.Options) (client.Options, error) {
	opts.MetricsHandler = temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: p.MeterProvider.Meter("go.temporal.io/sdk"),
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

// TemporalTracing is the Temporal SDK's tracing interceptor on p's tracer
// provider and propagator.
func TemporalTracing(p *Providers) (interceptor.Interceptor, error) {
	tracing, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer:            p.TracerProvider.Tracer("go.temporal.io/sdk"),
		TextMapPropagator: p.Propagator,
	})
	if err != nil {
		return nil, fmt.Errorf("telemetry: Temporal tracing interceptor: %w", err)
	}
	return tracing, nil
}
