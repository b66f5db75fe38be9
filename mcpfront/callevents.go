package mcpfront

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"

	"github.com/durawait/durawait/internal/callevents"
	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

// How a call came to its wait, in the started event's wait_start and the
// log line's message.
const (
	waitStarted  = "started"
	waitAttached = "attached"
	// waitUnknown: Temporal's answer did not say (the Temporal client was
	// dialed without StartReporter).
	waitUnknown = "started_or_attached"
)

// callEvents wraps the handler of the tool s: every call gets a fresh
// call ID, its started, progress and ended events go to the hub, and a
// call on a wait logs one line when the wait is started or attached to and
// one when the call ends. The started event of a call that starts a wait
// (s.startsWait) waits for the wait's ID (noteWait).
func (f *Front) callEvents(s *toolSpec, h server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		c := &toolCall{f: f, spec: s, id: newCallID(), begun: time.Now(), who: mcpwire.CallerFrom(ctx), client: f.client(ctx, &req)}
		if !s.startsWait {
			c.startOnce()
		}
		// The end is deferred, so a handler that panics (mcp-go's
		// recovery catches it outside this wrapper) still publishes its
		// ended event and writes its end line: outcome "error", the
		// panic's text as the result. Then the panic goes on.
		returned := false
		defer func() {
			if returned {
				c.end(ctx, res, err)
				return
			}
			panicked := recover() // nil for runtime.Goexit
			c.end(ctx, nil, fmt.Errorf("the %s handler panicked: %v", s.name, panicked))
			if panicked != nil {
				panic(panicked)
			}
		}()
		res, err = h(context.WithValue(ctx, toolCallKey{}, c), req)
		returned = true
		return res, err
	}
}

// toolCall is one tools/call in flight.
type toolCall struct {
	f      *Front
	spec   *toolSpec
	id     string
	begun  time.Time
	who    mcpwire.Caller
	client string

	mu        sync.Mutex
	started   bool
	waitID    string
	waitStart string
	// target is what the call's wait waits for (workflows.WaitForTarget
	// and its kin), once its handler parsed it.
	target string
	// traceID is the call's trace (its span's, or the caller's W3C
	// traceparent), for its log lines; "" when it has none.
	traceID string
}

// noteTrace records the trace of ctx's span on the call, once.
func (c *toolCall) noteTrace(ctx context.Context) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return
	}
	c.mu.Lock()
	if c.traceID == "" {
		c.traceID = sc.TraceID().String()
	}
	c.mu.Unlock()
}

type toolCallKey struct{}

func callFrom(ctx context.Context) *toolCall {
	c, _ := ctx.Value(toolCallKey{}).(*toolCall)
	return c
}

// noteTarget records what the call's wait waits for: on its span
// (durawait.target), its events and its wait's log line. Its handler
// notes it before the wait starts.
func noteTarget(ctx context.Context, target string) {
	noteAttributes(ctx, attrTarget.String(target))
	if c := callFrom(ctx); c != nil {
		c.mu.Lock()
		c.target = target
		c.mu.Unlock()
	}
}

// noteWait records the wait a call started (how: waitStarted) or attached
// to (waitAttached): the call's started event goes out with the wait's ID,
// the wait's log line is written, and the wait metrics count it
// (noteWaitStart).
func noteWait(ctx context.Context, waitID, how string) {
	noteWaitStart(ctx, how)
	c := callFrom(ctx)
	if c == nil {
		return
	}
	c.noteTrace(ctx)
	c.mu.Lock()
	if c.waitID != "" {
		c.mu.Unlock()
		return
	}
	c.waitID, c.waitStart = waitID, how
	c.mu.Unlock()
	msg := "wait " + how
	if how == waitUnknown {
		msg = "wait started or attached"
	}
	c.f.opts.Logger.Info(msg, c.logAttrs()...)
	c.startOnce()
	c.f.tellCaller(ctx, mcp.LoggingLevelInfo, map[string]any{"message": msg, "tool": c.spec.name, "wait_id": waitID})
}

// noteProgress publishes a sample or state change of the call's wait.
func noteProgress(ctx context.Context, progress, total float64, message string) {
	c := callFrom(ctx)
	if c == nil || !c.f.subscribed() {
		return
	}
	c.startOnce()
	ev := c.event(callevents.TypeProgress)
	ev.Progress, ev.Total, ev.Message = progress, total, message
	c.publish(ev)
}

// startOnce publishes the call's started event, once.
func (c *toolCall) startOnce() {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return
	}
	c.started = true
	c.mu.Unlock()
	ev := c.event(callevents.TypeStarted)
	ev.Time = c.begun.UTC()
	c.publish(ev)
}

// end publishes the ended event with the (truncated) result, and logs the
// end of a call that had a wait.
func (c *toolCall) end(ctx context.Context, res *mcp.CallToolResult, err error) {
	c.noteTrace(ctx)
	outcome := callOutcome(ctx, c.spec, res, err)
	switch {
	case err != nil:
		c.finish(outcome, true, err.Error())
	case res != nil:
		c.finish(outcome, res.IsError, res)
	default:
		c.finish(outcome, false, nil)
	}
}

// finish publishes the ended event with outcome and result (a string as
// it is, anything else as its JSON; truncated), and logs the end of a
// call that had a wait.
func (c *toolCall) finish(outcome string, isError bool, result any) {
	c.startOnce()
	took := time.Since(c.begun)
	if c.f.subscribed() {
		// The result's JSON (maybe megabytes) is built only for a
		// subscriber.
		ev := c.event(callevents.TypeEnded)
		ev.Outcome, ev.IsError = outcome, isError
		ev.DurationMS = took.Milliseconds()
		switch r := result.(type) {
		case nil:
		case string:
			ev.Result, ev.ResultCut = callevents.Truncate(r, c.maxLength())
		default:
			if text, merr := resultJSON(r); merr == nil {
				ev.Result, ev.ResultCut = callevents.Truncate(text, c.maxLength())
			}
		}
		c.publish(ev)
	}
	c.mu.Lock()
	waitID := c.waitID
	c.mu.Unlock()
	if waitID != "" {
		c.f.opts.Logger.Info("wait call ended", append(c.logAttrs(), "outcome", outcome, "duration_ms", took.Milliseconds())...)
	}
}

// resultJSON is v's JSON with <, > and & left as they are (json.Marshal,
// also inside mcp-go's MarshalJSON, writes \u003c and the like): they count
// as one character each in the truncation, as the caller got them, and the
// frame's own encoding escapes them once.
func resultJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return unescapeHTML(b), nil
}

// unescapeHTML turns the escapes \u003c, \u003e and \u0026 of JSON text back
// into <, > and &, leaving every other escape (\\ included) as it is.
func unescapeHTML(b []byte) string {
	var out strings.Builder
	out.Grow(len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out.WriteByte(b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c":
				out.WriteByte('<')
				i += 5
				continue
			case "003e":
				out.WriteByte('>')
				i += 5
				continue
			case "0026":
				out.WriteByte('&')
				i += 5
				continue
			}
		}
		out.WriteByte(b[i])
		out.WriteByte(b[i+1])
		i++
	}
	return out.String()
}

// subscribed reports whether anyone reads the tool-call events now: the
// work of an event (a progress message, a result's JSON) is done only
// then.
func (f *Front) subscribed() bool {
	hub := f.opts.CallEvents.Hub
	return hub != nil && hub.Subscribers() > 0
}

func (c *toolCall) maxLength() int {
	if n := c.f.opts.CallEvents.ResultMaxLength; n > 0 {
		return n
	}
	return callevents.DefaultResultMaxLength
}

// event is an event of type typ with the call's identity.
func (c *toolCall) event(typ string) callevents.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return callevents.Event{
		Type: typ, Tool: c.spec.name, CallID: c.id, WaitID: c.waitID, WaitStart: c.waitStart, Target: c.target,
		Principal: workflows.CallerValue(c.who.Principal), Owner: c.who.Principal,
		Session: mcpwire.SessionOf(c.who.Session), Client: c.client,
	}
}

func (c *toolCall) publish(ev callevents.Event) {
	if hub := c.f.opts.CallEvents.Hub; hub != nil {
		hub.Publish(ev)
	}
}

// logAttrs are the fields of a wait's log lines.
func (c *toolCall) logAttrs() []any {
	c.mu.Lock()
	defer c.mu.Unlock()
	attrs := []any{"tool", c.spec.name, "wait_id", c.waitID, "call_id", c.id,
		slog.Group("caller", "principal", workflows.CallerValue(c.who.Principal), "client", c.client, "session", mcpwire.SessionOf(c.who.Session))}
	if c.target != "" {
		attrs = append(attrs, "target", c.target)
	}
	if c.traceID != "" {
		attrs = append(attrs, "trace_id", c.traceID)
	}
	return attrs
}

func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call-" + hex.EncodeToString(b[:])
}

// startReport is where StartReporter tells a wait's start what Temporal
// answered.
type startReport struct {
	mu      sync.Mutex
	seen    bool
	started bool
}

type startReportKey struct{}

// how says whether the start started the workflow or attached to it.
func (r *startReport) how() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !r.seen:
		return waitUnknown
	case r.started:
		return waitStarted
	}
	return waitAttached
}

// StartReporter is a gRPC client interceptor for the front end's Temporal
// connection: it tells a wait's start whether Temporal started a new
// workflow (StartWorkflowExecutionResponse.started) or attached the call to
// the running one (conflict policy USE_EXISTING), which the SDK's
// ExecuteWorkflow does not say. Dial the Temporal client with
// grpc.WithChainUnaryInterceptor(mcpfront.StartReporter); without it the
// wait's log line says "started or attached".
func StartReporter(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	r, ok := ctx.Value(startReportKey{}).(*startReport)
	if !ok || err != nil {
		return err
	}
	if resp, ok := reply.(*workflowservice.StartWorkflowExecutionResponse); ok {
		r.mu.Lock()
		r.seen, r.started = true, resp.GetStarted()
		r.mu.Unlock()
	}
	return err
}

// EventsHandler serves GET /events: the tool-call events as Server-Sent
// Events (see docs/operations.md), behind the same Origin and Host checks and
// authentication as /mcp (opts as for mcpwire.NewHTTPHandler). A principal sees
// only its own calls' events; the local user (no authentication) sees
// every call. ?tool= filters by tool (repeatable, or a comma list). Drain
// ends the streams.
func (f *Front) EventsHandler(opts mcpwire.HTTPOptions) http.Handler {
	admission := mcpwire.NewAdmission(opts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "/events takes GET only", http.StatusMethodNotAllowed)
			return
		}
		principal, ok := admission.Admit(w, r)
		if !ok {
			return
		}
		hub := f.opts.CallEvents.Hub
		if hub == nil {
			http.Error(w, "tool-call events are not enabled in this process", http.StatusNotFound)
			return
		}
		tools, err := callevents.ParseTools(r.URL.Query()[callevents.ToolParam], f.knownTool)
		if err != nil {
			http.Error(w, err.Error()+" (known tools: "+strings.Join(f.knownTools(), ", ")+")", http.StatusBadRequest)
			return
		}
		filter := callevents.Filter{Tools: tools, Principal: principal, AllPrincipals: opts.Authenticate == nil}
		sub, unsubscribe, err := hub.Join(filter, principal)
		if err != nil {
			w.Header().Set("Retry-After", "30")
			http.Error(w, err.Error()+": close a stream first (each subscriber gets every event it may see; one per consumer is enough)", http.StatusTooManyRequests)
			return
		}
		defer unsubscribe()
		// A shutdown ends the stream (Drain), so the listener closes at
		// once instead of waiting for the subscriber to leave.
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(f.drain.stop, cancel)()
		stream := callevents.StreamOptions{Heartbeat: f.opts.CallEvents.Heartbeat}
		if opts.Authenticate != nil {
			// A token removed from the tokens file, or a JWT past its
			// exp, ends the stream at the next heartbeat.
			stream.Recheck = func() error {
				if p, ok := opts.Authenticate(discardResponse{}, r); !ok || p != principal {
					return errCredentialsGone
				}
				return nil
			}
		}
		if err := callevents.StreamWith(ctx, w, sub, stream); err != nil && !errors.Is(err, context.Canceled) {
			f.opts.Logger.Debug("event stream ended", "error", err)
		}
	})
}

// errCredentialsGone ends an event stream whose credentials no longer
// authenticate its principal.
var errCredentialsGone = errors.New("the stream's credentials are no longer valid (expired or revoked): subscribe again with valid ones")

// discardResponse is where a stream's re-authentication writes its 401:
// nowhere, the stream is already answered.
type discardResponse struct{}

func (discardResponse) Header() http.Header         { return http.Header{} }
func (discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (discardResponse) WriteHeader(int)             {}

// knownTools are the tool names /events accepts in its filter: durawait's
// own tools (served or not) and the re-exposed ones listed now.
func (f *Front) knownTools() []string {
	names := workflows.OwnTools()
	if cat := f.catalog(); cat != nil {
		for name := range cat.exposed {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func (f *Front) knownTool(name string) bool { return slices.Contains(f.knownTools(), name) }
