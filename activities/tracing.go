package activities

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the spans activities start.
const tracerName = "github.com/durawait/durawait/activities"

// startCallSpan starts a client span around one downstream MCP call, as a
// child of the span in ctx (the activity's, when Temporal's tracing
// interceptor runs), on that span's own tracer provider: with no tracing
// configured it is a no-op and costs next to nothing.
func startCallSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	tp := trace.SpanFromContext(ctx).TracerProvider()
	return tp.Tracer(tracerName).Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// endCallSpan ends a call span with the call's status.
func endCallSpan(span trace.Span, err error, toolError bool) {
	switch {
	case err != nil:
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	case toolError:
		span.SetStatus(codes.Error, "the tool answered with isError")
	}
	span.End()
}
