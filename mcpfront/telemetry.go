package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/durawait/durawait/workflows"
)

// instrumentationName names the front's tracer and meter.
const instrumentationName = "github.com/durawait/durawait/mcpfront"

// The metrics the front records (docs/observability.md).
const (
	MetricWaitsStarted     = "durawait.waits.started"
	MetricWaitsEnded       = "durawait.waits.ended"
	MetricWaitsInFlight    = "durawait.waits.in_flight"
	MetricWaitDuration     = "durawait.wait.duration"
	MetricDetectionLatency = "durawait.wait_for.detection_latency"
	// MetricWaitStarts counts how each call came to its wait: by tool and
	// wait_start (started: a new wait workflow or agent invocation;
	// attached: the running one; started_or_attached: Temporal's answer
	// did not say). Distinct waits are its wait_start=started points;
	// durawait.waits.started counts calls, re-calls after a client's
	// timeout included.
	MetricWaitStarts = "durawait.waits.start_or_attach"
)

// The span attributes of the tool-call spans (the names of the tools'
// contracts).
const (
	attrWaitCondition = attribute.Key("wait_condition")
	attrProbeTool     = attribute.Key("probe_tool")
	attrTarget        = attribute.Key("durawait.target")
	attrPollCount     = attribute.Key("poll_count")
	attrStopReason    = attribute.Key("stop_reason")
	attrElapsedMs     = attribute.Key("elapsed_ms")
	attrInvocationID  = attribute.Key("invocation_id")
	attrFanInMode     = attribute.Key("durawait.fan_in_mode")
	attrInvocationIDs = attribute.Key("durawait.invocation_ids")
	attrProvider      = attribute.Key("provider")
	attrStatus        = attribute.Key("status")
	attrReason        = attribute.Key("reason")
	attrPane          = attribute.Key("pane")
	attrEventName     = attribute.Key("event.name")
	attrEventSeq      = attribute.Key("event.seq")
	attrAnswered      = attribute.Key("event.answered")
	attrMatched       = attribute.Key("matched")
	attrSource        = attribute.Key("source")
	attrTool          = attribute.Key("tool")
	attrOutcome       = attribute.Key("outcome")
	attrWaitStart     = attribute.Key("wait_start")
	attrTask          = attribute.Key("task")
	attrCancelledBy   = attribute.Key("cancelled_by")
)

// toolTelemetry instruments the calls of one tool.
type toolTelemetry struct {
	spec       *toolSpec
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	wait       bool
	toolAttr   metric.MeasurementOption

	started, ended metric.Int64Counter
	inFlight       metric.Int64UpDownCounter
	// starts counts the calls' wait_start (MetricWaitStarts).
	starts    metric.Int64Counter
	duration  metric.Float64Histogram
	detection metric.Float64Histogram
}

// observed wraps the handler of the tool s: one span per call, named after
// the tool, with the tool's attributes (those its handler noted of the
// parsed arguments, and those of its structured result), and (for the
// wait tools) the wait metrics.
func (f *Front) observed(s *toolSpec, next server.ToolHandlerFunc) server.ToolHandlerFunc {
	t := newToolTelemetry(f.opts.Telemetry, s, f.opts.Logger.Warn)
	if t == nil {
		return next
	}
	return t.handle(next)
}

// newToolTelemetry builds the instruments of one tool; nil when tel
// records nothing of its calls (no tracer, and no meter or a tool that
// neither waits nor starts a wait). warn reports an instrument the meter
// refused.
func newToolTelemetry(tel Telemetry, s *toolSpec, warn func(string, ...any)) *toolTelemetry {
	metered := s.wait || s.startsWait
	if tel.TracerProvider == nil && (tel.MeterProvider == nil || !metered) {
		return nil
	}
	t := &toolTelemetry{spec: s, propagator: tel.Propagator, wait: s.wait}
	if tel.TracerProvider != nil {
		t.tracer = tel.TracerProvider.Tracer(instrumentationName)
	}
	if tel.MeterProvider != nil && metered {
		m := tel.MeterProvider.Meter(instrumentationName)
		t.toolAttr = metric.WithAttributeSet(attribute.NewSet(attrTool.String(s.name)))
		var errs []error
		add := func(err error) { errs = append(errs, err) }
		var err error
		t.starts, err = m.Int64Counter(MetricWaitStarts, metric.WithUnit("{call}"),
			metric.WithDescription("How wait tool calls came to their wait, by tool and wait_start (started, attached, started_or_attached)."))
		add(err)
		if !t.wait {
			if err := errors.Join(errs...); err != nil {
				warn("a wait metric could not be created; it records nothing", "tool", s.name, "error", err)
			}
			return t
		}
		t.started, err = m.Int64Counter(MetricWaitsStarted, metric.WithUnit("{wait}"),
			metric.WithDescription("Wait tool calls started (wait_for, wait_for_text, wait_agent), by tool."))
		add(err)
		t.ended, err = m.Int64Counter(MetricWaitsEnded, metric.WithUnit("{wait}"),
			metric.WithDescription("Wait tool calls answered, by tool and outcome."))
		add(err)
		t.inFlight, err = m.Int64UpDownCounter(MetricWaitsInFlight, metric.WithUnit("{wait}"),
			metric.WithDescription("Wait tool calls in flight, by tool."))
		add(err)
		t.duration, err = m.Float64Histogram(MetricWaitDuration, metric.WithUnit("s"),
			metric.WithDescription("Duration of a wait tool call, from the call to its answer, by tool and outcome."),
			metric.WithExplicitBucketBoundaries(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300))
		add(err)
		t.detection, err = m.Float64Histogram(MetricDetectionLatency, metric.WithUnit("s"),
			metric.WithDescription("wait_for: from the worker holding the probe answer that met the condition to the tool call answering."),
			metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
		add(err)
		if err := errors.Join(errs...); err != nil {
			warn("a wait metric could not be created; it records nothing", "tool", s.name, "error", err)
		}
	}
	return t
}

// handle is the instrumented handler. The span, the in-flight count and
// the measurements end in a deferred function, so a handler that panics
// (mcp-go's recovery catches it outside this wrapper) still ends them: its
// outcome is an error, and the panic goes on.
func (t *toolTelemetry) handle(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		ctx, span := t.startSpan(ctx, req)
		rec := &callRecord{t: t}
		ctx = context.WithValue(ctx, callRecordKey{}, rec)
		start := time.Now()
		if t.wait {
			t.count(ctx, t.started, 1)
			t.upDown(ctx, 1)
		}
		returned := false
		defer func() {
			answered := time.Now()
			outcomeErr := err
			var panicked any
			if !returned {
				// A panic, or runtime.Goexit (recover returns nil).
				panicked = recover()
				outcomeErr = fmt.Errorf("the %s handler panicked: %v", t.spec.name, panicked)
				res = nil
			}
			outcome := callOutcome(ctx, t.spec, res, outcomeErr)
			t.finishSpan(span, res, outcomeErr, rec)
			if t.wait {
				t.upDown(ctx, -1)
				t.measure(ctx, outcome, answered.Sub(start), rec, answered)
			}
			if panicked != nil {
				panic(panicked)
			}
		}()
		res, err = next(ctx, req)
		returned = true
		return res, err
	}
}

// startSpan starts the call's span, named after the tool, under the
// parent that parent picks; a no-op span without a tracer.
func (t *toolTelemetry) startSpan(ctx context.Context, req mcp.CallToolRequest) (context.Context, trace.Span) {
	if t.tracer == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	ctx, kind := t.parent(ctx, req)
	return t.tracer.Start(ctx, t.spec.name, trace.WithSpanKind(kind))
}

// parent picks the call span's parent: W3C trace context in the request's
// _meta wins (a server span under the caller's span); otherwise the span
// already in ctx (the otelhttp span: an internal span under it), or none
// (a server span, the root of a trace).
func (t *toolTelemetry) parent(ctx context.Context, req mcp.CallToolRequest) (context.Context, trace.SpanKind) {
	if t.propagator != nil {
		if carrier := metaCarrier(req); carrier != nil {
			extracted := t.propagator.Extract(ctx, carrier)
			if sc := trace.SpanContextFromContext(extracted); sc.IsValid() && sc.IsRemote() {
				return extracted, trace.SpanKindServer
			}
		}
	}
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, trace.SpanKindInternal
	}
	return ctx, trace.SpanKindServer
}

// metaCarrier is the W3C trace context of a request's _meta (string
// values of traceparent, tracestate and baggage), or nil.
func metaCarrier(req mcp.CallToolRequest) propagation.MapCarrier {
	if req.Params.Meta == nil {
		return nil
	}
	var carrier propagation.MapCarrier
	for _, key := range []string{"traceparent", "tracestate", "baggage"} {
		if v, ok := req.Params.Meta.AdditionalFields[key].(string); ok && v != "" {
			if carrier == nil {
				carrier = propagation.MapCarrier{}
			}
			carrier[key] = v
		}
	}
	if carrier["traceparent"] == "" {
		return nil
	}
	return carrier
}

// finishSpan sets the tool's attributes and the status on span and ends
// it. The status of an isError answer is a fixed message with its outcome
// (its error code when the result names one, wait_for_text's
// pane_not_found say, else workflows.OutcomeError), never the result's text (which
// may hold probe output or a downstream server's error). The call's
// outcome for the metrics is callOutcome's.
func (t *toolTelemetry) finishSpan(span trace.Span, res *mcp.CallToolResult, err error, rec *callRecord) {
	attrs, outcome := callAttributes(t.spec, res, rec)
	switch {
	case err != nil:
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	case res != nil && res.IsError:
		if outcome == "" {
			outcome = workflows.OutcomeError
		}
		span.SetStatus(codes.Error, "the tool answered with isError: "+outcome)
	}
	if span.IsRecording() {
		if how := rec.waitStart(); how != "" {
			attrs = append(attrs, attrWaitStart.String(how))
		}
	}
	if len(attrs) > 0 {
		span.SetAttributes(attrs...)
	}
	span.End()
}

// count, upDown and measure record the wait metrics (when the meter gave
// the instruments).
func (t *toolTelemetry) count(ctx context.Context, c metric.Int64Counter, n int64) {
	if c != nil {
		c.Add(ctx, n, t.toolAttr)
	}
}

func (t *toolTelemetry) upDown(ctx context.Context, n int64) {
	if t.inFlight != nil {
		t.inFlight.Add(ctx, n, t.toolAttr)
	}
}

func (t *toolTelemetry) measure(ctx context.Context, outcome string, took time.Duration, rec *callRecord, answered time.Time) {
	withOutcome := metric.WithAttributeSet(attribute.NewSet(attrTool.String(t.spec.name), attrOutcome.String(outcome)))
	if t.ended != nil {
		t.ended.Add(ctx, 1, withOutcome)
	}
	if t.duration != nil {
		t.duration.Record(ctx, took.Seconds(), withOutcome)
	}
	rec.mu.Lock()
	detected, sampleAt := rec.detected, rec.sampleAt
	rec.mu.Unlock()
	if t.detection != nil && detected && !sampleAt.IsZero() {
		t.detection.Record(ctx, answered.Sub(sampleAt).Seconds(),
			metric.WithAttributeSet(attribute.NewSet(attrOutcome.String(outcome))))
	}
}

// callRecord is what a handler tells the instrumentation about its call.
// The handler and the deferred end of the call read and write it, maybe
// from different goroutines (a panic's), so it has a lock.
type callRecord struct {
	// t is the call's instrumentation.
	t  *toolTelemetry
	mu sync.Mutex
	// how is the call's wait_start, once known (noteWaitStart).
	how string
	// attrs are the span attributes the handler noted (noteAttributes).
	attrs []attribute.KeyValue
	// task marks a task-augmented call (observedTask).
	task bool
	// sampleAt is when the call learnt of the wait's latest sample.
	sampleAt time.Time
	// detected says the answer is a condition met (not a timeout).
	detected bool
}

type callRecordKey struct{}

func recordFrom(ctx context.Context) *callRecord {
	rec, _ := ctx.Value(callRecordKey{}).(*callRecord)
	return rec
}

// waitStart is the call's wait_start, or "".
func (r *callRecord) waitStart() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.how
}

// noted are the attributes the handler noted.
func (r *callRecord) noted() []attribute.KeyValue {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.attrs)
}

// noteWaitStart tells the instrumentation of ctx's call how it came to its
// wait (waitStarted, waitAttached or waitUnknown), and counts that in
// MetricWaitStarts, once per call.
func noteWaitStart(ctx context.Context, how string) {
	rec := recordFrom(ctx)
	if rec == nil {
		return
	}
	rec.mu.Lock()
	first := rec.how == ""
	if first {
		rec.how = how
	}
	rec.mu.Unlock()
	if first {
		rec.t.countStart(ctx, how, rec.task)
	}
}

// noteAttributes tells the instrumentation of ctx's call span attributes
// of its request as its handler parsed it (wait_for's condition and
// resolved probe, a pane, an invocation and its provider): the span says
// what the call did, not what the caller typed. A key noted again keeps
// its first value.
func noteAttributes(ctx context.Context, kvs ...attribute.KeyValue) {
	rec := recordFrom(ctx)
	if rec == nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, kv := range kvs {
		if !kv.Valid() || kv.Value.Emit() == "" || slices.ContainsFunc(rec.attrs, func(have attribute.KeyValue) bool { return have.Key == kv.Key }) {
			continue
		}
		rec.attrs = append(rec.attrs, kv)
	}
}

// countStart counts one call's wait_start; task marks a task-augmented
// call.
func (t *toolTelemetry) countStart(ctx context.Context, how string, task bool) {
	if t.starts == nil {
		return
	}
	kvs := []attribute.KeyValue{attrTool.String(t.spec.name), attrWaitStart.String(how)}
	if task {
		kvs = append(kvs, attrTask.Bool(true))
	}
	t.starts.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(kvs...)))
}

// noteSample tells the instrumentation of ctx's call that a sample of its
// wait arrived now (the in-process feed delivers it the moment the worker
// holds the probe's answer).
func noteSample(ctx context.Context) {
	if rec := recordFrom(ctx); rec != nil {
		rec.mu.Lock()
		rec.sampleAt = time.Now()
		rec.mu.Unlock()
	}
}

// noteDetected tells the instrumentation of ctx's call that its answer is
// a condition met on the latest sample.
func noteDetected(ctx context.Context, result workflows.WaitForResult) {
	if rec := recordFrom(ctx); rec != nil && result.Reason != workflows.WaitReasonTimeout {
		rec.mu.Lock()
		rec.detected = true
		rec.mu.Unlock()
	}
}

// callAttributes are the span attributes of one call of the tool s (those
// its handler noted, then those of its structured result) and the call's
// outcome for the metrics.
func callAttributes(s *toolSpec, res *mcp.CallToolResult, rec *callRecord) ([]attribute.KeyValue, string) {
	attrs := rec.noted()
	if s.resultAttributes == nil || res == nil {
		return attrs, ""
	}
	more, outcome := s.resultAttributes(res.StructuredContent)
	for _, kv := range more {
		if !slices.ContainsFunc(attrs, func(have attribute.KeyValue) bool { return have.Key == kv.Key }) {
			attrs = append(attrs, kv)
		}
	}
	return attrs, outcome
}

// waitForResultAttributes are the span attributes of a wait_for result and
// its outcome: its reason, or workflows.OutcomeCancelled.
func waitForResultAttributes(structured any) ([]attribute.KeyValue, string) {
	var result struct {
		workflows.WaitForResult
		// Cancelled is set when an operator cancelled the wait
		// (cancelledWaitFor).
		Cancelled *workflows.Cancellation `json:"cancelled"`
	}
	if !asResult(structured, &result) || result.Reason == "" {
		return nil, ""
	}
	attrs := []attribute.KeyValue{
		attrPollCount.Int(result.Samples),
		attrStopReason.String(string(result.Reason)),
		attrElapsedMs.Int64(int64(result.ElapsedSec*1000 + 0.5)),
	}
	if result.Cancelled != nil {
		// The contract's stop_reason stays "failed"; the outcome says
		// cancelled, as DurawaitState and the worker's "wait ended" do.
		attrs = append(attrs, attrCancelledBy.String(result.Cancelled.By))
		return attrs, workflows.OutcomeCancelled
	}
	return attrs, string(result.Reason)
}

// invocationResultAttributes are the span attributes of an agent tool's
// payload and its outcome: the invocation's status.
func invocationResultAttributes(structured any) ([]attribute.KeyValue, string) {
	var payload workflows.InvocationPayload
	if !asResult(structured, &payload) {
		return nil, ""
	}
	var attrs []attribute.KeyValue
	if payload.InvocationID != "" {
		attrs = append(attrs, attrInvocationID.String(payload.InvocationID))
	}
	if payload.Status == "" {
		return attrs, ""
	}
	attrs = append(attrs, attrStatus.String(string(payload.Status)), attrReason.String(string(payload.Reason)))
	return attrs, string(payload.Status)
}

// textResultAttributes are the span attributes of a wait_for_text result
// and its outcome: matched, not_matched, or its error's code.
func textResultAttributes(structured any) ([]attribute.KeyValue, string) {
	var out struct {
		*workflows.TextWaitResult
		Error *workflows.TextWaitError `json:"error"`
	}
	if !asResult(structured, &out) {
		return nil, ""
	}
	switch {
	case out.Error != nil:
		return nil, string(out.Error.Code)
	case out.TextWaitResult != nil && out.Source != "":
		attrs := []attribute.KeyValue{attrMatched.Bool(out.Matched), attrSource.String(out.Source)}
		if out.Matched {
			return attrs, "matched"
		}
		return attrs, "not_matched"
	}
	return nil, ""
}

// asResult reads a structured result into v: directly when it already is
// v's type, through JSON otherwise. It reports whether v was filled.
func asResult[T any](structured any, v *T) bool {
	switch s := structured.(type) {
	case nil:
		return false
	case T:
		*v = s
		return true
	case *T:
		if s == nil {
			return false
		}
		*v = *s
		return true
	}
	raw, err := json.Marshal(structured)
	if err != nil {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// taskTelemetry is the instrumentation of the task-augmented calls of the
// tool s, built once; nil when nothing is recorded.
func (f *Front) taskTelemetry(s *toolSpec) *toolTelemetry {
	if v, ok := f.taskTel.Load(s.name); ok {
		return v.(*toolTelemetry)
	}
	t := newToolTelemetry(f.opts.Telemetry, s, f.opts.Logger.Warn)
	v, _ := f.taskTel.LoadOrStore(s.name, t)
	return v.(*toolTelemetry)
}

// callOutcome names how a call of tool ended, one value for the metrics
// (durawait.waits.ended), the log lines and the events: workflows.OutcomeClientGone
// when the caller went away (the wait runs on); the tool's own outcome
// read from its structured result (wait_for's reason, an agent's status,
// wait_for_text's matched / not_matched or error code); workflows.OutcomeError for
// any other error or isError answer; for any other result its "status",
// "reason" or "matched" field, else "ok".
func callOutcome(ctx context.Context, s *toolSpec, res *mcp.CallToolResult, err error) string {
	switch {
	case err != nil && (ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return workflows.OutcomeClientGone
	case err != nil || res == nil:
		return workflows.OutcomeError
	}
	if s.resultAttributes != nil {
		if _, outcome := s.resultAttributes(res.StructuredContent); outcome != "" {
			return outcome
		}
	}
	if res.IsError {
		return workflows.OutcomeError
	}
	var fields map[string]any
	if b, merr := json.Marshal(res.StructuredContent); merr == nil {
		_ = json.Unmarshal(b, &fields)
	}
	for _, key := range []string{"status", "reason"} {
		if s, ok := fields[key].(string); ok && s != "" {
			return s
		}
	}
	if m, ok := fields["matched"].(bool); ok {
		if m {
			return "matched"
		}
		return "not_matched"
	}
	return "ok"
}
