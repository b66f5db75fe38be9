package engine

import (
	"go.opentelemetry.io/otel/sdk/trace"
	"go.temporal.io/server/chasm"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/persistence/serialization"
	"go.temporal.io/server/common/pprof"
	"go.temporal.io/server/common/resource"
	"go.temporal.io/server/temporal"
	"go.uber.org/fx"
)

// serverModule is temporal.TopLevelModule with one part replaced: where
// the engine's spans go. The stock part (temporal.TraceExportModule) reads
// the OTEL_* environment on its own: it exports over gRPC whatever
// OTEL_EXPORTER_OTLP_PROTOCOL says, refuses to start on any
// OTEL_TRACES_EXPORTER but otlp or none, and sets the process-wide OTel
// error handler. Here the engine exports to spans, the exporter durawait
// built (honouring the protocol), or nowhere when spans is nil (then every
// Temporal service gets a no-op tracer provider). See
// docs/observability.md.
//
// The list mirrors temporal.TopLevelModule of the pinned server version
// (v1.32.1); engine_test starts the engine through it.
func serverModule(spans trace.SpanExporter) fx.Option {
	return fx.Options(
		fx.Provide(
			temporal.NewServerFxImpl,
			temporal.ServerOptionsProvider,
			resource.ArchivalMetadataProvider,
			temporal.TaskCategoryRegistryProvider,
			temporal.HistoryServiceProvider,
			temporal.MatchingServiceProvider,
			temporal.FrontendServiceProvider,
			temporal.InternalFrontendServiceProvider,
			temporal.WorkerServiceProvider,
			temporal.ApplyClusterMetadataConfigProvider,
		),
		dynamicconfig.Module,
		pprof.Module,
		fx.Provide(func() []trace.SpanExporter {
			if spans == nil {
				return nil
			}
			return []trace.SpanExporter{spans}
		}),
		chasm.Module,
		serialization.Module,
		temporal.FxLogAdapter,
		fx.Invoke(temporal.ServerLifetimeHooks),
	)
}
