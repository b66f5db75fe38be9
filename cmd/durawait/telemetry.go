package main

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.temporal.io/sdk/client"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/internal/telemetry"
	"github.com/durawait/durawait/mcpfront"
	"github.com/durawait/durawait/workflows"
)

// The metrics recorded here rather than in the front end
// (docs/observability.md).
const (
	metricSamples             = "durawait.wait_for.samples"
	metricDownstreamAvailable = "durawait.downstream.available"
)

// telemetryShutdownTimeout bounds the flush of what is buffered at exit.
const telemetryShutdownTimeout = 5 * time.Second

// startTelemetry builds the OpenTelemetry providers from the OTEL_*
// environment (docs/observability.md); its stop, the last to run, flushes
// them.
func (p *process) startTelemetry(ctx context.Context) (func(), error) {
	tel, err := telemetry.New(ctx, telemetry.Options{Version: version, Logger: p.logger})
	if err != nil {
		return nil, err
	}
	p.telemetry = tel
	meter := tel.MeterProvider.Meter(telemetry.InstrumentationName)
	_, err = meter.Int64ObservableGauge(metricDownstreamAvailable,
		metric.WithDescription("1 while a downstream MCP server is connected, 0 while it is unavailable, by server."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			// Set once the roles started (serve); nothing before.
			status := p.availability.Load()
			if status == nil {
				return nil
			}
			for server, state := range (*status)() {
				var up int64
				if state == "connected" {
					up = 1
				}
				o.Observe(up, metric.WithAttributeSet(attribute.NewSet(attribute.String("server", server))))
			}
			return nil
		}))
	if err != nil {
		p.logger.Warn("the downstream availability metric could not be created", "error", err)
	}
	s := tel.Settings
	p.logger.Debug("telemetry", "traces", s.Traces.Exporter, "traces_protocol", s.Traces.Protocol,
		"metrics", s.Metrics.Exporter, "metrics_protocol", s.Metrics.Protocol, "engine_spans", s.Engine)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), telemetryShutdownTimeout)
		defer cancel()
		if err := tel.Shutdown(ctx); err != nil {
			p.logger.Warn("telemetry not flushed", "error", err)
		}
	}, nil
}

// metricsHandler serves /metrics: the Prometheus exposition, always on.
func (p *process) metricsHandler() http.Handler {
	if p.telemetry == nil {
		return http.NotFoundHandler()
	}
	return p.telemetry.PrometheusHandler()
}

// engineSpans is where the embedded engine's own spans go: nowhere unless
// DURAWAIT_ENGINE_OTEL opts in (telemetry.Providers.EngineSpanExporter).
func (p *process) engineSpans() sdktrace.SpanExporter {
	if p.telemetry == nil {
		return nil
	}
	exp, err := p.telemetry.EngineSpanExporter(context.Background())
	if err != nil {
		p.logger.Warn("the embedded engine exports no spans", "error", err)
		return nil
	}
	return exp
}

// engineMeters is where the embedded engine's action counter goes: the
// process's MeterProvider, so /metrics shows durawait_engine_actions_total.
func (p *process) engineMeters() metric.MeterProvider {
	if p.telemetry == nil {
		return nil
	}
	return p.telemetry.MeterProvider
}

// shutdownExporter shuts down an exporter nobody else will (nil: none).
func shutdownExporter(exp sdktrace.SpanExporter, logger *slog.Logger) {
	if exp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), telemetryShutdownTimeout)
	defer cancel()
	if err := exp.Shutdown(ctx); err != nil {
		logger.Warn("the embedded engine's span exporter did not shut down", "error", err)
	}
}

// instrumented adds the Temporal SDK's metrics and tracing interceptor to
// the options of the client dial (the workers built on the client get the
// interceptor too).
func (p *process) instrumented(opts client.Options) client.Options {
	if p.telemetry == nil {
		return opts
	}
	out, err := p.telemetry.TemporalClient(opts)
	if err != nil {
		p.logger.Warn("Temporal calls are not traced", "error", err)
		return opts
	}
	return out
}

// frontTelemetry is the front end's instrumentation.
func (p *process) frontTelemetry() mcpfront.Telemetry {
	if p.telemetry == nil {
		return mcpfront.Telemetry{}
	}
	t := mcpfront.Telemetry{MeterProvider: p.telemetry.MeterProvider, Propagator: p.telemetry.Propagator}
	if p.telemetry.Settings.Traces.On() {
		t.TracerProvider = p.telemetry.TracerProvider
	}
	return t
}

// traced instruments the /mcp handler with otelhttp: a server span per
// request (W3C trace context in the headers is its parent) and the HTTP
// server metrics.
func (p *process) traced(h http.Handler) http.Handler {
	if p.telemetry == nil {
		return h
	}
	var addr string
	if p.http != nil {
		addr = p.http.addr
	}
	return otelhttp.NewHandler(h, "mcp",
		// The listener's address, not the request's Host header: the
		// handler runs before authentication, and a Host of the caller's
		// choosing would be a new series of every HTTP metric.
		otelhttp.WithServerName(addr),
		otelhttp.WithTracerProvider(p.telemetry.TracerProvider),
		otelhttp.WithMeterProvider(p.telemetry.MeterProvider),
		otelhttp.WithPropagators(p.telemetry.Propagator))
}

// observer is what the worker's activities tell in process: the hub, and
// the sample count.
func (p *process) observer(next activities.Observer) activities.Observer {
	if p.telemetry == nil {
		return next
	}
	samples, err := p.telemetry.MeterProvider.Meter(telemetry.InstrumentationName).Int64Counter(metricSamples,
		metric.WithUnit("{sample}"), metric.WithDescription("Probe samples taken by wait_for probe loops on this worker."))
	if err != nil {
		p.logger.Warn("the samples metric could not be created", "error", err)
		return next
	}
	return sampleCounter{next: next, samples: samples}
}

// sampleCounter counts wait_for's samples as the probe loops report them.
type sampleCounter struct {
	next    activities.Observer
	samples metric.Int64Counter
}

// Observe implements activities.Observer.
func (c sampleCounter) Observe(workflowID string, event workflows.WaitEvent) {
	if _, ok := event.(workflows.Sample); ok {
		c.samples.Add(context.Background(), 1)
	}
	if c.next != nil {
		c.next.Observe(workflowID, event)
	}
}
