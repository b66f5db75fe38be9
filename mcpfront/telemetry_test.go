package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/mocks"

	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

// recorded is a Telemetry over in-memory exporters, and a Front whose
// parsers read the calls (with a catalog that has k8s.kubectl_get and
// demo.clock, and the provider claude).
type recorded struct {
	tel    Telemetry
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	front  *Front
}

func newRecorded(t *testing.T) *recorded {
	t.Helper()
	r := &recorded{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	r.tel = Telemetry{TracerProvider: r.tp, MeterProvider: mp,
		Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}
	r.front = New(Options{TaskQueue: "q",
		Workers: fakeDownstream{order: []string{"k8s", "demo"}, tools: map[string][]string{"k8s": {"kubectl_get"}, "demo": {"clock", "read_file"}}},
		Agents:  AgentOptions{Limits: workflows.AgentLimits{Providers: []string{"claude"}, AllowedRoots: []string{"/tmp"}}}})
	return r
}

// call runs one call of tool through the instrumentation: the tool's own
// parser reads the arguments (and notes the span attributes it parsed, as
// the tool's handler does), then answer answers.
func (r *recorded) call(t *testing.T, ctx context.Context, tool string, args map[string]any, meta map[string]any, answer server.ToolHandlerFunc) (*mcp.CallToolResult, error) {
	t.Helper()
	tt := newToolTelemetry(r.tel, r.front.tools.of(tool), t.Logf)
	require.NotNil(t, tt)
	handler := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		switch tool {
		case workflows.ToolWaitFor:
			r.front.prepareWaitFor(ctx, req)
		case workflows.ToolWaitForText:
			r.front.prepareWaitForText(ctx, req)
		case workflows.ToolStartAgent:
			r.front.parseStartAgent(ctx, req)
		case workflows.ToolWaitAgent, workflows.ToolCancelAgent:
			parseInvocation(ctx, req)
		}
		return answer(ctx, req)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	if meta != nil {
		req.Params.Meta = &mcp.Meta{AdditionalFields: meta}
	}
	return tt.handle(handler)(ctx, req)
}

// lastSpan is the last span ended, which must be named name.
func (r *recorded) lastSpan(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	ended := r.spans.Ended()
	require.NotEmpty(t, ended)
	span := ended[len(ended)-1]
	require.Equal(t, name, span.Name())
	return span
}

// attrs is a span's attributes as a map.
func attrs(span sdktrace.ReadOnlySpan) map[string]any {
	out := map[string]any{}
	for _, kv := range span.Attributes() {
		out[string(kv.Key)] = kv.Value.AsInterface()
	}
	return out
}

func answerWith(res *mcp.CallToolResult) server.ToolHandlerFunc {
	return func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil }
}

func TestWaitForSpanHasExactlyTheContractsAttributes(t *testing.T) {
	r := newRecorded(t)
	args := map[string]any{"probe": map[string]any{"tool": "k8s.kubectl_get", "args": map[string]any{"x": 1}},
		"until": map[string]any{"not_matches": "Terminating", "fail_matches": "Error"}, "poll_sec": 1}
	_, err := r.call(t, context.Background(), "wait_for", args, nil, answerWith(structuredResult(workflows.WaitForResult{
		Reason: workflows.WaitReasonMatched, Condition: workflows.ConditionNotMatches, LastObservation: "ok",
		ElapsedSec: 4.2, Samples: 5, EffectiveMaxWaitSec: 120,
	})))
	require.NoError(t, err)
	span := r.lastSpan(t, "wait_for")
	assert.Equal(t, map[string]any{
		"wait_condition": "not_matches", "probe_tool": "k8s.kubectl_get",
		"poll_count": int64(5), "stop_reason": "matched", "elapsed_ms": int64(4200),
		// durawait's own, beside the contract's: what the wait waits for.
		"durawait.target": "k8s.kubectl_get x=1 not_matches Terminating",
	}, attrs(span))
	assert.Equal(t, trace.SpanKindServer, span.SpanKind(), "no parent: the call's span is a server span")
	assert.Equal(t, codes.Unset, span.Status().Code)

	_, err = r.call(t, context.Background(), "wait_for", map[string]any{"probe": map[string]any{"tool": "clock"},
		"until": map[string]any{"quiet_for_sec": 2}}, nil, answerWith(structuredResult(workflows.WaitForResult{
		Reason: workflows.WaitReasonTimeout, ElapsedSec: 0.0004, Samples: 1})))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"wait_condition": "quiet_for_sec", "probe_tool": "demo.clock",
		"poll_count": int64(1), "stop_reason": "timeout", "elapsed_ms": int64(0),
		"durawait.target": "demo.clock quiet_for_sec 2",
	}, attrs(r.lastSpan(t, "wait_for")), "the probe as resolved, as the probe's span and DurawaitProbeTool name it")
}

// An operator's cancel of wait_for keeps the contract's stop_reason
// ("failed"), names who cancelled, and counts as outcome cancelled.
func TestACancelledWaitForIsCancelledNotFailed(t *testing.T) {
	r := newRecorded(t)
	res := cancelledFront().cancelledWaitFor(context.Background(), "wait_for/abc", "run-1", 120)
	_, err := r.call(t, context.Background(), "wait_for", map[string]any{"probe": map[string]any{"tool": "clock"},
		"until": map[string]any{"matches": "x"}}, nil, answerWith(res))
	require.NoError(t, err)
	span := r.lastSpan(t, "wait_for")
	assert.Equal(t, map[string]any{
		"wait_condition": "matches", "probe_tool": "demo.clock", "poll_count": int64(0), "stop_reason": "failed",
		"elapsed_ms": int64(12000), "cancelled_by": "operator-alice", "durawait.target": "demo.clock matches x",
	}, attrs(span))
	assert.Equal(t, "the tool answered with isError: cancelled", span.Status().Description)
	assert.Equal(t, map[string]float64{"outcome=cancelled,tool=wait_for": 1}, metricPoints(t, r.reader, MetricWaitsEnded))
}

func TestAWaitForErrorSetsTheSpanStatus(t *testing.T) {
	r := newRecorded(t)
	_, err := r.call(t, context.Background(), "wait_for", map[string]any{"probe": map[string]any{"tool": "clock"}},
		nil, answerWith(mcp.NewToolResultError("wait_for: until: is required")))
	require.NoError(t, err)
	span := r.lastSpan(t, "wait_for")
	assert.Equal(t, codes.Error, span.Status().Code)
	assert.Equal(t, "the tool answered with isError: error", span.Status().Description, "a fixed message, never the result's text")
	assert.Empty(t, attrs(span), "arguments the parser refused name nothing")

	_, err = r.call(t, context.Background(), "wait_for", nil, nil,
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, context.Canceled })
	require.ErrorIs(t, err, context.Canceled)
	span = r.lastSpan(t, "wait_for")
	assert.Equal(t, codes.Error, span.Status().Code)
	require.Len(t, span.Events(), 1, "the error is recorded")
}

func TestAgentSpansHaveTheirAttributes(t *testing.T) {
	r := newRecorded(t)
	id := workflows.InvocationID("", [16]byte{0xab})
	_, err := r.call(t, context.Background(), "start_agent", map[string]any{"provider": "claude", "prompt": "hi", "cwd": "/tmp"}, nil,
		answerWith(structuredResult(workflows.InvocationPayload{InvocationID: id, Status: workflows.AgentRunning, Reason: workflows.AgentReasonStarted})))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"invocation_id": id, "provider": "claude", "status": "running", "reason": "started"},
		attrs(r.lastSpan(t, "start_agent")), "the provider as parsed, the invocation as started")
	_, err = r.call(t, context.Background(), "start_agent", map[string]any{"provider": "claude", "prompt": "hi", "cwd": "/tmp"}, nil,
		answerWith(mcp.NewToolResultError("start_agent: could not start the invocation: engine down")))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"provider": "claude"}, attrs(r.lastSpan(t, "start_agent")), "a start that failed names no invocation")

	_, err = r.call(t, context.Background(), "wait_agent", map[string]any{"invocation_id": id}, nil,
		answerWith(structuredResult(workflows.InvocationPayload{InvocationID: id, Status: workflows.AgentBlocked, Reason: workflows.AgentReasonExecutionBlocked, ElapsedMs: 9})))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"invocation_id": id, "status": "blocked", "reason": "execution_blocked"},
		attrs(r.lastSpan(t, "wait_agent")))

	_, err = r.call(t, context.Background(), "cancel_agent", map[string]any{"invocation_id": id}, nil,
		answerWith(mcp.NewToolResultError("cancel_agent: invocation_id: unknown")))
	require.NoError(t, err)
	span := r.lastSpan(t, "cancel_agent")
	assert.Equal(t, map[string]any{"invocation_id": id}, attrs(span), "the ID asked about, even on an error")

	_, err = r.call(t, context.Background(), "cancel_agent", map[string]any{"invocation_id": "nonsense"}, nil,
		answerWith(mcp.NewToolResultError("cancel_agent: invocation_id: not one")))
	require.NoError(t, err)
	assert.Empty(t, attrs(r.lastSpan(t, "cancel_agent")), "an ID the parser refused is named nowhere")
	assert.Equal(t, codes.Error, span.Status().Code)
}

func TestWaitForTextSpanHasItsAttributes(t *testing.T) {
	r := newRecorded(t)
	args := map[string]any{"target": map[string]any{"paneId": "%3", "generation": "g1"}, "text": "READY"}
	_, err := r.call(t, context.Background(), "wait_for_text", args, nil, answerWith(structuredResult(&workflows.TextWaitResult{
		Matched: true, Source: "output", Text: "READY", Target: workflows.PaneTarget{PaneID: "%3", Generation: "g1"}})))
	require.NoError(t, err)
	target := `tmux pane %3 contains "READY"`
	assert.Equal(t, map[string]any{"pane": "%3", "matched": true, "source": "output", "durawait.target": target}, attrs(r.lastSpan(t, "wait_for_text")))

	_, err = r.call(t, context.Background(), "wait_for_text", args, nil,
		answerWith(textError(workflows.TextWaitError{Code: workflows.TextErrPaneNotFound, Message: "no pane %3", Effects: "none"})))
	require.NoError(t, err)
	span := r.lastSpan(t, "wait_for_text")
	assert.Equal(t, map[string]any{"pane": "%3", "durawait.target": target}, attrs(span))
	assert.Equal(t, codes.Error, span.Status().Code)
}

func TestOtherToolsGetASpanWithoutAttributes(t *testing.T) {
	r := newRecorded(t)
	_, err := r.call(t, context.Background(), "demo.read_file", map[string]any{"path": "/x"}, nil, answerWith(mcp.NewToolResultText("hi")))
	require.NoError(t, err)
	span := r.lastSpan(t, "demo.read_file")
	assert.Empty(t, span.Attributes())
	assert.Equal(t, codes.Unset, span.Status().Code)
}

// The span's parent: trace context in _meta wins over the span in the
// context (the HTTP request's), which wins over none.
func TestTheSpansParentIsMetaThenTheRequestsSpan(t *testing.T) {
	r := newRecorded(t)
	httpCtx, httpSpan := r.tp.Tracer("test").Start(context.Background(), "http")
	defer httpSpan.End()

	_, err := r.call(t, httpCtx, "list_agents", nil, nil, answerWith(mcp.NewToolResultText("[]")))
	require.NoError(t, err)
	span := r.lastSpan(t, "list_agents")
	assert.Equal(t, httpSpan.SpanContext().SpanID(), span.Parent().SpanID())
	assert.Equal(t, httpSpan.SpanContext().TraceID(), span.SpanContext().TraceID())
	assert.Equal(t, trace.SpanKindInternal, span.SpanKind())

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	meta := map[string]any{"traceparent": "00-" + traceID + "-" + parentID + "-01", "tracestate": "vendor=1", "progressToken": "p"}
	_, err = r.call(t, httpCtx, "list_agents", nil, meta, answerWith(mcp.NewToolResultText("[]")))
	require.NoError(t, err)
	span = r.lastSpan(t, "list_agents")
	assert.Equal(t, traceID, span.SpanContext().TraceID().String())
	assert.Equal(t, parentID, span.Parent().SpanID().String())
	assert.True(t, span.Parent().IsRemote())
	assert.Equal(t, "vendor=1", span.SpanContext().TraceState().String())
	assert.Equal(t, trace.SpanKindServer, span.SpanKind())

	// A malformed traceparent is ignored: the request's span stays the parent.
	_, err = r.call(t, httpCtx, "list_agents", nil, map[string]any{"traceparent": "00-zz-00-01"}, answerWith(mcp.NewToolResultText("[]")))
	require.NoError(t, err)
	assert.Equal(t, httpSpan.SpanContext().SpanID(), r.lastSpan(t, "list_agents").Parent().SpanID())
}

// The handler reaches the span: what it starts under ctx is the span's
// child (the Temporal client's spans).
func TestTheHandlerRunsUnderTheToolSpan(t *testing.T) {
	r := newRecorded(t)
	var inner trace.SpanContext
	_, err := r.call(t, context.Background(), "wait_for", nil, nil, func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_, span := r.tp.Tracer("test").Start(ctx, "StartWorkflow:WaitFor")
		inner = span.SpanContext()
		span.End()
		return mcp.NewToolResultText("x"), nil
	})
	require.NoError(t, err)
	tool := r.lastSpan(t, "wait_for")
	var child sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.SpanContext().SpanID() == inner.SpanID() {
			child = s
		}
	}
	require.NotNil(t, child)
	assert.Equal(t, tool.SpanContext().SpanID(), child.Parent().SpanID())
}

// metricPoints collects the reader's data points of one metric as
// "attr=value,..." -> value (sums) or count (histograms).
func metricPoints(t *testing.T, reader *sdkmetric.ManualReader, name string) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]float64{}
	key := func(set attribute.Set) string {
		s := ""
		for _, kv := range set.ToSlice() {
			if s != "" {
				s += ","
			}
			s += string(kv.Key) + "=" + kv.Value.Emit()
		}
		return s
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[key(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[key(p.Attributes)] = float64(p.Count)
				}
			}
		}
	}
	return out
}

func TestWaitMetricsCountByToolAndOutcome(t *testing.T) {
	r := newRecorded(t)
	matched := func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		noteSample(ctx)
		res := workflows.WaitForResult{Reason: workflows.WaitReasonMatched, Samples: 2, ElapsedSec: 2}
		noteDetected(ctx, res)
		return structuredResult(res), nil
	}
	timeout := func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		noteSample(ctx)
		res := workflows.WaitForResult{Reason: workflows.WaitReasonTimeout, Samples: 3, ElapsedSec: 3}
		noteDetected(ctx, res)
		return structuredResult(res), nil
	}
	var inFlight map[string]float64
	observeInFlight := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		inFlight = metricPoints(t, r.reader, MetricWaitsInFlight)
		return structuredResult(&workflows.TextWaitResult{Matched: true, Source: "baseline"}), nil
	}
	ctx := context.Background()
	for _, h := range []server.ToolHandlerFunc{matched, matched, timeout, answerWith(mcp.NewToolResultError("wait_for: until: is required"))} {
		_, err := r.call(t, ctx, "wait_for", nil, nil, h)
		require.NoError(t, err)
	}
	_, err := r.call(t, ctx, "wait_for_text", nil, nil, observeInFlight)
	require.NoError(t, err)
	_, err = r.call(t, ctx, "list_agents", nil, nil, answerWith(mcp.NewToolResultText("[]")))
	require.NoError(t, err)

	assert.Equal(t, map[string]float64{"tool=wait_for": 4, "tool=wait_for_text": 1}, metricPoints(t, r.reader, MetricWaitsStarted),
		"list_agents is no wait")
	assert.Equal(t, map[string]float64{
		"outcome=matched,tool=wait_for": 2, "outcome=timeout,tool=wait_for": 1, "outcome=error,tool=wait_for": 1,
		"outcome=matched,tool=wait_for_text": 1,
	}, metricPoints(t, r.reader, MetricWaitsEnded))
	assert.Equal(t, map[string]float64{"tool=wait_for": 0, "tool=wait_for_text": 1}, inFlight, "in flight while the call runs")
	assert.Equal(t, map[string]float64{"tool=wait_for": 0, "tool=wait_for_text": 0}, metricPoints(t, r.reader, MetricWaitsInFlight))
	assert.Equal(t, map[string]float64{
		"outcome=matched,tool=wait_for": 2, "outcome=timeout,tool=wait_for": 1, "outcome=error,tool=wait_for": 1,
		"outcome=matched,tool=wait_for_text": 1,
	}, metricPoints(t, r.reader, MetricWaitDuration))
	assert.Equal(t, map[string]float64{"outcome=matched": 2}, metricPoints(t, r.reader, MetricDetectionLatency),
		"a timeout detected nothing")
}

// Through the front: every listed tool's handler is instrumented,
// re-exposed downstream tools too.
func TestTheFrontInstrumentsEveryTool(t *testing.T) {
	r := newRecorded(t)
	f := New(Options{Telemetry: r.tel, Workers: fakeDownstream{
		order:  []string{"demo"},
		expose: map[string]bool{"demo": true},
		defs:   map[string][]mcp.Tool{"demo": {mcp.NewTool("echo")}},
		call: func(func(mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("hi"), nil
		},
	}})
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "echo", "arguments": map[string]any{}}})
	require.NoError(t, err)
	resp := f.mcp.HandleMessage(context.Background(), msg)
	_, ok := resp.(mcp.JSONRPCResponse)
	require.True(t, ok, "%#v", resp)
	r.lastSpan(t, "echo")

	bad, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "wait_for", "arguments": map[string]any{"probe": map[string]any{"tool": "echo"}}}})
	require.NoError(t, err)
	f.mcp.HandleMessage(context.Background(), bad)
	span := r.lastSpan(t, "wait_for")
	assert.Equal(t, codes.Error, span.Status().Code, "bad arguments are an error")
	assert.Equal(t, map[string]float64{"outcome=error,tool=wait_for": 1}, metricPoints(t, r.reader, MetricWaitsEnded))
}

// With no providers, nothing wraps the handlers; with metrics alone, only
// the wait tools' handlers are wrapped.
func TestNoTelemetryWrapsNothing(t *testing.T) {
	own := newToolTable()
	assert.Nil(t, newToolTelemetry(Telemetry{}, own.of("wait_for"), t.Logf))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	assert.Nil(t, newToolTelemetry(Telemetry{MeterProvider: mp}, own.of("list_agents"), t.Logf))
	assert.Nil(t, newToolTelemetry(Telemetry{MeterProvider: mp}, own.of("demo.read_file"), t.Logf))
	assert.NotNil(t, newToolTelemetry(Telemetry{MeterProvider: mp}, own.of("wait_agent"), t.Logf))
}

// BenchmarkToolCallInstrumentation is the cost the instrumentation adds to
// one wait_for call: none, metrics only (the default: /metrics is always
// on), and metrics with a span recorded.
func BenchmarkToolCallInstrumentation(b *testing.B) {
	result := structuredResult(workflows.WaitForResult{Reason: workflows.WaitReasonMatched, Samples: 3, ElapsedSec: 4, LastObservation: "READY"})
	handler := func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		noteSample(ctx)
		noteDetected(ctx, workflows.WaitForResult{Reason: workflows.WaitReasonMatched})
		return result, nil
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "wait_for"
	req.Params.Arguments = map[string]any{"probe": map[string]any{"tool": "demo.read_file", "args": map[string]any{"path": "/x"}},
		"until": map[string]any{"matches": "READY"}}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	for _, bc := range []struct {
		name string
		tel  Telemetry
	}{
		{"off", Telemetry{}},
		{"metrics", Telemetry{MeterProvider: mp}},
		{"metrics+traces", Telemetry{MeterProvider: mp, TracerProvider: tp, Propagator: propagation.TraceContext{}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := server.ToolHandlerFunc(handler)
			if tt := newToolTelemetry(bc.tel, newToolTable().of("wait_for"), b.Logf); tt != nil {
				h = tt.handle(handler)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// wait_for_text's error codes are its outcomes (docs/observability.md),
// not a bare "error"; the span's status names the code, not the message.
func TestWaitForTextErrorsCountByTheirCode(t *testing.T) {
	r := newRecorded(t)
	for _, code := range []workflows.TextErrorCode{workflows.TextErrPaneNotFound, workflows.TextErrPaneNotFound, workflows.TextErrTmuxUnavailable} {
		_, err := r.call(t, context.Background(), "wait_for_text", nil, nil,
			answerWith(textError(workflows.TextWaitError{Code: code, Message: "secret pane output", Effects: "none"})))
		require.NoError(t, err)
	}
	_, err := r.call(t, context.Background(), "wait_for_text", nil, nil, answerWith(mcp.NewToolResultError("wait_for_text: text: is required")))
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{
		"outcome=pane_not_found,tool=wait_for_text": 2, "outcome=tmux_unavailable,tool=wait_for_text": 1,
		"outcome=error,tool=wait_for_text": 1,
	}, metricPoints(t, r.reader, MetricWaitsEnded))
	spans := r.spans.Ended()
	assert.Equal(t, "the tool answered with isError: tmux_unavailable", spans[2].Status().Description)
	assert.NotContains(t, spans[2].Status().Description, "secret")
}

// A caller that goes away is client_gone (the wait runs on); any other
// handler error is an error.
func TestAGoneCallerIsClientGone(t *testing.T) {
	r := newRecorded(t)
	for _, fail := range []error{context.Canceled, context.DeadlineExceeded, errors.New("boom")} {
		_, err := r.call(t, context.Background(), "wait_for", nil, nil,
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, fail })
		require.ErrorIs(t, err, fail)
	}
	assert.Equal(t, map[string]float64{"outcome=client_gone,tool=wait_for": 2, "outcome=error,tool=wait_for": 1},
		metricPoints(t, r.reader, MetricWaitsEnded))
	assert.Equal(t, map[string]float64{"tool=wait_for": 0}, metricPoints(t, r.reader, MetricWaitsInFlight))
}

// wait_agent's outcome is the invocation's status.
func TestWaitAgentOutcomesAreTheStatus(t *testing.T) {
	r := newRecorded(t)
	for _, status := range []workflows.AgentStatus{workflows.AgentRunning, workflows.AgentBlocked, workflows.AgentBlocked} {
		_, err := r.call(t, context.Background(), "wait_agent", map[string]any{"invocation_id": "agent/x"}, nil,
			answerWith(structuredResult(workflows.InvocationPayload{InvocationID: "agent/x", Status: status})))
		require.NoError(t, err)
	}
	assert.Equal(t, map[string]float64{"outcome=running,tool=wait_agent": 1, "outcome=blocked,tool=wait_agent": 2},
		metricPoints(t, r.reader, MetricWaitsEnded))
}

// A handler that panics still ends its span and leaves nothing in flight;
// the panic goes on to mcp-go's recovery.
func TestAPanickingHandlerEndsItsCall(t *testing.T) {
	r := newRecorded(t)
	assert.PanicsWithValue(t, "kaboom", func() {
		_, _ = r.call(t, context.Background(), "wait_for", nil, nil,
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { panic("kaboom") })
	})
	span := r.lastSpan(t, "wait_for")
	assert.Equal(t, codes.Error, span.Status().Code)
	assert.Contains(t, span.Status().Description, "kaboom")
	assert.Equal(t, map[string]float64{"tool=wait_for": 0}, metricPoints(t, r.reader, MetricWaitsInFlight))
	assert.Equal(t, map[string]float64{"outcome=error,tool=wait_for": 1}, metricPoints(t, r.reader, MetricWaitsEnded))
}

// The detection latency is the time from the sample that met the
// condition to the answer: recorded in seconds, within the bounds of the
// call.
func TestDetectionLatencyIsTheSampleToAnswerTime(t *testing.T) {
	r := newRecorded(t)
	var before time.Time
	_, err := r.call(t, context.Background(), "wait_for", nil, nil, func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		before = time.Now()
		noteSample(ctx)
		res := workflows.WaitForResult{Reason: workflows.WaitReasonMatched, Samples: 1}
		noteDetected(ctx, res)
		return structuredResult(res), nil
	})
	end := time.Now()
	require.NoError(t, err)
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	var got *metricdata.HistogramDataPoint[float64]
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == MetricDetectionLatency {
				got = &m.Data.(metricdata.Histogram[float64]).DataPoints[0]
			}
		}
	}
	require.NotNil(t, got)
	require.Equal(t, uint64(1), got.Count)
	assert.GreaterOrEqual(t, got.Sum, 0.0)
	assert.LessOrEqual(t, got.Sum, end.Sub(before).Seconds(), "no longer than from the sample to the call's return")
	assert.Less(t, got.Sum, 1.0, "seconds, not milliseconds")
}

// How a call came to its wait: the wait_start attribute of its span and
// durawait.waits.start_or_attach, once per call; start_agent counts too.
func TestWaitStartsAreCountedApart(t *testing.T) {
	r := newRecorded(t)
	ctx := context.Background()
	started := func(how string) server.ToolHandlerFunc {
		return func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			noteWait(ctx, "wait_for/x", how)
			noteWait(ctx, "wait_for/x", how) // once per call
			return structuredResult(workflows.WaitForResult{Reason: workflows.WaitReasonMatched}), nil
		}
	}
	for _, how := range []string{waitStarted, waitAttached, waitAttached, waitUnknown} {
		_, err := r.call(t, ctx, "wait_for", nil, nil, started(how))
		require.NoError(t, err)
		assert.Equal(t, how, attrs(r.lastSpan(t, "wait_for"))["wait_start"])
	}
	_, err := r.call(t, ctx, "start_agent", nil, nil, started(waitStarted))
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{
		"tool=wait_for,wait_start=started": 1, "tool=wait_for,wait_start=attached": 2,
		"tool=wait_for,wait_start=started_or_attached": 1, "tool=start_agent,wait_start=started": 1,
	}, metricPoints(t, r.reader, MetricWaitStarts))
	assert.Equal(t, map[string]float64{"tool=wait_for": 4}, metricPoints(t, r.reader, MetricWaitsStarted), "calls, start_agent is no wait")
}

// wait_agent's span names the provider when the handler read the
// invocation's memo.
func TestWaitAgentSpanNamesTheProvider(t *testing.T) {
	r := newRecorded(t)
	_, err := r.call(t, context.Background(), "wait_agent", map[string]any{"invocation_id": "agent/x"}, nil,
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			noteAttributes(ctx, attrProvider.String("claude"))
			return structuredResult(workflows.InvocationPayload{InvocationID: "agent/x", Status: workflows.AgentRunning}), nil
		})
	require.NoError(t, err)
	assert.Equal(t, "claude", attrs(r.lastSpan(t, "wait_agent"))["provider"])
}

// A task-augmented call gets its span (under _meta's trace context, so the
// workflow's start is in the caller's trace) and counts as started, with
// task=true.
func TestTaskCallsAreTracedAndCounted(t *testing.T) {
	r := newRecorded(t)
	tc := &mocks.Client{}
	var startCtx context.Context
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WaitForWorkflowName, mock.Anything).
		Run(func(args mock.Arguments) { startCtx = args.Get(0).(context.Context) }).
		Return(nil, errors.New("engine down"))
	f := New(Options{Telemetry: r.tel, Temporal: tc, Workers: fakeDownstream{order: []string{"demo"}, tools: map[string][]string{"demo": {"read_file"}}}})
	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	msg := mcpwire.Request{ID: json.RawMessage(`7`), Method: "tools/call", Params: json.RawMessage(`{"name":"wait_for","task":{"ttl":1000},` +
		`"_meta":{"traceparent":"00-` + traceID + `-` + parentID + `-01"},` +
		`"arguments":{"probe":{"tool":"read_file","args":{"path":"/x"}},"until":{"matches":"READY"}}}`)}
	resp, handled := f.handleOwn(context.Background(), msg)
	require.True(t, handled)
	_, isErr := resp.(mcp.JSONRPCError)
	require.True(t, isErr, "%#v", resp)

	span := r.lastSpan(t, "wait_for")
	assert.Equal(t, traceID, span.SpanContext().TraceID().String())
	assert.Equal(t, parentID, span.Parent().SpanID().String())
	assert.Equal(t, trace.SpanKindServer, span.SpanKind())
	assert.Equal(t, codes.Error, span.Status().Code)
	assert.Equal(t, true, attrs(span)["task"])
	assert.Equal(t, "demo.read_file", attrs(span)["probe_tool"], "the probe as resolved")
	require.NotNil(t, startCtx)
	assert.Equal(t, span.SpanContext().SpanID(), trace.SpanContextFromContext(startCtx).SpanID(), "Temporal's start runs under the task's span")
	assert.Equal(t, map[string]float64{"task=true,tool=wait_for": 1}, metricPoints(t, r.reader, MetricWaitsStarted))

}
