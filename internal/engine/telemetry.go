package engine

import (
	"go.opentelemetry.io/otel/sdk/trace"
	"go.temporal.io/server/temporal"
	"go.uber.org/fx"
)

// serverModule is temporal.TopLevelModule with one value replaced: where
// the engine's spans go. The stock provider of that value (in
// temporal.TraceExportModule) reads the OTEL_* environment on its own: it
// exports over gRPC whatever OTEL_EXPORTER_OTLP_PROTOCOL says, refuses to
// start on any OTEL_TRACES_EXPORTER but otlp or none, and sets the
// process-wide OTel error handler. The decorator takes no input, so that
// provider is never called: the engine exports to spans, the exporter
// durawait built (honouring the protocol), or nowhere when spans is nil
// (then every Temporal service gets a no-op tracer provider). See
// docs/observability.md; engine_test checks the stock provider stays
// uncalled.
func serverModule(spans trace.SpanExporter) fx.Option {
	return fx.Options(
		temporal.TopLevelModule,
		fx.Decorate(func() []trace.SpanExporter {
			if spans == nil {
				return nil
			}
			return []trace.SpanExporter{spans}
		}),
	)
}
