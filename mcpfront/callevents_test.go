package mcpfront

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/durawait/durawait/internal/callevents"
	"github.com/durawait/durawait/internal/samplehub"
	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

// lockedBuffer is a log destination that tests read while handlers write.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// eventsFront is a Front on a fake Temporal whose wait_for runs report two
// samples and a match through the in-process feed; its tool-call events go
// to hub and its logs to logs.
func eventsFront(t *testing.T, handler func(*lockedBuffer) slog.Handler, maxLen int) (*Front, *callevents.Hub, *lockedBuffer) {
	t.Helper()
	tc, feed := newFakeTemporal(), samplehub.New()
	tc.onStart = func(run *fakeRun) {
		feed.Observe(run.id, workflows.Sample{Number: 1, Expected: 60, Observation: "building"})
		feed.Observe(run.id, workflows.Sample{Number: 2, Expected: 60, Observation: "all READY"})
		feed.Observe(run.id, workflows.WaitForResult{Reason: workflows.WaitReasonMatched, Condition: workflows.ConditionMatches,
			LastObservation: strings.Repeat("READY ", 20), Samples: 2, EffectiveMaxWaitSec: 60})
	}
	hub, logs := callevents.NewHub(0), &lockedBuffer{}
	f := New(Options{
		Temporal: tc, Events: feed, TaskQueue: "q",
		Workers:    fakeDownstream{order: []string{"demo"}, tools: map[string][]string{"demo": {"read_file"}}, expose: map[string]bool{"demo": true}},
		CallEvents: CallEventOptions{Hub: hub, ResultMaxLength: maxLen},
		Logger:     slog.New(handler(logs)),
	})
	return f, hub, logs
}

// callTool calls a tool through the MCP server as a transport would, as
// principal.
func callTool(t *testing.T, f *Front, principal, tool string, args map[string]any) mcp.CallToolResult {
	t.Helper()
	params, err := json.Marshal(map[string]any{"name": tool, "arguments": args})
	require.NoError(t, err)
	ctx := mcpwire.WithCaller(testContext(t), mcpwire.Caller{Principal: principal, Session: "sess-1~call-7"})
	resp := f.mcp.HandleMessage(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+string(params)+`}`))
	res, ok := resp.(mcp.JSONRPCResponse)
	require.True(t, ok, "%#v", resp)
	b, err := json.Marshal(res.Result)
	require.NoError(t, err)
	var out mcp.CallToolResult
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

var waitForArgs = map[string]any{
	"probe": map[string]any{"tool": "read_file", "args": map[string]any{"path": "/tmp/status"}},
	"until": map[string]any{"matches": "READY"}, "poll_sec": 1, "max_wait_sec": 60,
}

func jsonLogs(w *lockedBuffer) slog.Handler { return slog.NewJSONHandler(w, nil) }
func textLogs(w *lockedBuffer) slog.Handler { return slog.NewTextHandler(w, nil) }

// drainEvents takes what the subscription holds now.
func drainEvents(sub *callevents.Subscription) []callevents.Event {
	var out []callevents.Event
	for {
		select {
		case ev := <-sub.Events():
			out = append(out, ev)
		default:
			return out
		}
	}
}

// The local user's events name it as the logs and DurawaitCaller do,
// "anonymous"; they still reach only the local user's subscriptions.
func TestTheLocalUsersEventsSayAnonymous(t *testing.T) {
	f, hub, logs := eventsFront(t, jsonLogs, 40)
	local, endLocal := hub.Subscribe(callevents.Filter{})
	defer endLocal()
	named, endNamed := hub.Subscribe(callevents.Filter{Principal: workflows.CallerAnonymous})
	defer endNamed()

	callTool(t, f, "", "wait_for", waitForArgs)
	evs := drainEvents(local)
	require.NotEmpty(t, evs)
	for _, ev := range evs {
		assert.Equal(t, "anonymous", ev.Principal)
		var frame bytes.Buffer
		require.NoError(t, callevents.WriteFrame(&frame, ev))
		assert.Contains(t, frame.String(), `"principal":"anonymous"`)
	}
	assert.Empty(t, drainEvents(named), "a principal named anonymous is not the local user")
	assert.Contains(t, logs.String(), `"principal":"anonymous"`)
}

func TestAWaitForCallPublishesStartedSamplesAndEnded(t *testing.T) {
	f, hub, _ := eventsFront(t, jsonLogs, 40)
	sub, end := hub.Subscribe(callevents.Filter{AllPrincipals: true})
	defer end()

	res := callTool(t, f, "alice", "wait_for", waitForArgs)
	require.False(t, res.IsError)

	evs := drainEvents(sub)
	require.Len(t, evs, 4, "%+v", evs)
	types := []string{evs[0].Type, evs[1].Type, evs[2].Type, evs[3].Type}
	assert.Equal(t, []string{callevents.TypeStarted, callevents.TypeProgress, callevents.TypeProgress, callevents.TypeEnded}, types)
	for _, ev := range evs {
		assert.Equal(t, "wait_for", ev.Tool, "the tool the client called, not the probe")
		assert.Equal(t, evs[0].CallID, ev.CallID)
		assert.True(t, strings.HasPrefix(ev.WaitID, workflows.WaitForIDPrefix), ev.WaitID)
		assert.Equal(t, evs[0].WaitID, ev.WaitID)
		assert.Equal(t, "alice", ev.Principal)
		assert.Equal(t, "sess-1", ev.Session, "the client's session, not the per-request one")
	}
	assert.True(t, strings.HasPrefix(evs[0].CallID, "call-"))
	assert.Equal(t, waitUnknown, evs[0].WaitStart, "the fake Temporal has no gRPC answer to read")
	assert.Equal(t, float64(1), evs[1].Progress)
	assert.Equal(t, float64(60), evs[1].Total)
	assert.Equal(t, "sample 2: all READY", evs[2].Message)
	ended := evs[3]
	assert.Equal(t, "matched", ended.Outcome)
	assert.False(t, ended.IsError)
	whole, err := json.Marshal(res)
	require.NoError(t, err)
	assert.Greater(t, len(whole), 40)
	assert.Greater(t, ended.ResultCut, 0)
	assert.Contains(t, ended.Result, "…[truncated: ")
	assert.Contains(t, ended.Result, " more characters]")

	// A second call is another call ID for the same kind of wait.
	callTool(t, f, "alice", "wait_for", map[string]any{
		"probe": map[string]any{"tool": "read_file", "args": map[string]any{"path": "/tmp/other"}},
		"until": map[string]any{"matches": "READY"}, "poll_sec": 1, "max_wait_sec": 60,
	})
	again := drainEvents(sub)
	require.NotEmpty(t, again)
	assert.NotEqual(t, evs[0].CallID, again[0].CallID)
}

func TestABadCallEndsWithAnErrorEventAndNoWaitLogLine(t *testing.T) {
	f, hub, logs := eventsFront(t, jsonLogs, 0)
	sub, end := hub.Subscribe(callevents.Filter{AllPrincipals: true})
	defer end()
	res := callTool(t, f, "", "wait_for", map[string]any{"probe": map[string]any{"tool": ""}})
	require.True(t, res.IsError)
	evs := drainEvents(sub)
	require.Len(t, evs, 2)
	assert.Equal(t, callevents.TypeStarted, evs[0].Type)
	assert.Empty(t, evs[0].WaitID, "no wait was started")
	assert.Equal(t, "error", evs[1].Outcome)
	assert.True(t, evs[1].IsError)
	assert.Contains(t, evs[1].Result, "probe.tool")
	assert.NotContains(t, logs.String(), "wait call ended", "no wait, no wait log line")
	assert.NotContains(t, logs.String(), "wait started", "no wait, no start line either")
}

func TestWaitLogLinesAsJSON(t *testing.T) {
	f, _, logs := eventsFront(t, jsonLogs, 0)
	callTool(t, f, "alice", "wait_for", waitForArgs)

	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "every line is JSON: %q", line)
		if m["tool"] == "wait_for" {
			lines = append(lines, m)
		}
	}
	require.Len(t, lines, 2, "one line when the wait is started (or attached), one when the call ends: %s", logs.String())
	start, ended := lines[0], lines[1]
	assert.Equal(t, "INFO", start["level"])
	assert.Equal(t, "wait started or attached", start["msg"])
	assert.Equal(t, "wait call ended", ended["msg"])
	for _, l := range lines {
		assert.True(t, strings.HasPrefix(l["wait_id"].(string), workflows.WaitForIDPrefix))
		assert.Equal(t, map[string]any{"principal": "alice", "client": "", "session": "sess-1"}, l["caller"])
		assert.NotEmpty(t, l["call_id"])
	}
	assert.Equal(t, "matched", ended["outcome"])
	assert.Contains(t, ended, "duration_ms")
}

func TestWaitLogLinesAsText(t *testing.T) {
	f, _, logs := eventsFront(t, textLogs, 0)
	callTool(t, f, "", "wait_for", waitForArgs)
	var ended string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `msg="wait call ended"`) {
			ended = line
		}
	}
	require.NotEmpty(t, ended, logs.String())
	for _, want := range []string{"level=INFO", "tool=wait_for", "wait_id=wait_for/", "caller.principal=anonymous", "caller.session=sess-1", "outcome=matched", "duration_ms="} {
		assert.Contains(t, ended, want)
	}
}

// tokenAuth authenticates "Bearer <principal>" and answers 401 otherwise.
func tokenAuth(w http.ResponseWriter, r *http.Request) (string, bool) {
	p, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || p == "" {
		http.Error(w, "no token", http.StatusUnauthorized)
		return "", false
	}
	return p, true
}

// subscribeEvents opens GET /events as who and returns its frames.
func subscribeEvents(t *testing.T, url, who string) <-chan map[string]string {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+who)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, ": subscribed\n", line)
	frames := make(chan map[string]string, 64)
	go func() {
		defer resp.Body.Close()
		defer close(frames)
		fields := map[string]string{}
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "" && len(fields) > 0:
				frames <- fields
				fields = map[string]string{}
			case line == "" || strings.HasPrefix(line, ":"):
			default:
				k, v, _ := strings.Cut(line, ": ")
				fields[k] = v
			}
		}
	}()
	return frames
}

func nextFrame(t *testing.T, frames <-chan map[string]string) callevents.Event {
	t.Helper()
	select {
	case f, ok := <-frames:
		require.True(t, ok, "stream ended")
		var ev callevents.Event
		require.NoError(t, json.Unmarshal([]byte(f["data"]), &ev))
		assert.Equal(t, f["event"], ev.Type)
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event")
	}
	return callevents.Event{}
}

func TestEventsStreamIsPerPrincipalAndFiltersByTool(t *testing.T) {
	f, hub, _ := eventsFront(t, jsonLogs, 0)
	srv := httptest.NewServer(f.EventsHandler(mcpwire.HTTPOptions{Loopback: true, Authenticate: tokenAuth}))
	t.Cleanup(srv.Close) // after the streams' contexts end

	alice := subscribeEvents(t, srv.URL, "alice")
	bob := subscribeEvents(t, srv.URL, "bob")
	aliceAgents := subscribeEvents(t, srv.URL+"?tool=wait_agent", "alice")
	require.Eventually(t, func() bool { return hub.Subscribers() == 3 }, 10*time.Second, 10*time.Millisecond)

	callTool(t, f, "alice", "wait_for", waitForArgs)
	for _, want := range []string{callevents.TypeStarted, callevents.TypeProgress, callevents.TypeProgress, callevents.TypeEnded} {
		ev := nextFrame(t, alice)
		assert.Equal(t, want, ev.Type)
		assert.Equal(t, "alice", ev.Principal)
	}
	// Bob's own call is the first thing bob sees: alice's, published
	// before it, never reached him.
	callTool(t, f, "bob", "wait_for", waitForArgs)
	ev := nextFrame(t, bob)
	assert.Equal(t, "bob", ev.Principal)
	assert.Equal(t, callevents.TypeStarted, ev.Type)
	// The wait_agent filter let no wait_for event through: a sentinel
	// published straight to the hub is alice's first frame there.
	hub.Publish(callevents.Event{Type: callevents.TypeStarted, Tool: "wait_agent", Principal: "alice", Owner: "alice", CallID: "sentinel"})
	assert.Equal(t, "sentinel", nextFrame(t, aliceAgents).CallID)
}

func TestEventsStreamRefusals(t *testing.T) {
	f, _, _ := eventsFront(t, jsonLogs, 0)
	srv := httptest.NewServer(f.EventsHandler(mcpwire.HTTPOptions{Loopback: true, Authenticate: tokenAuth}))
	t.Cleanup(srv.Close) // after the streams' contexts end
	get := func(path string, header map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	status, _ := get("/events", nil)
	assert.Equal(t, http.StatusUnauthorized, status, "behind the same authentication as /mcp")
	status, body := get("/events?tool=wait_for,nope", map[string]string{"Authorization": "Bearer alice"})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, `query parameter tool: unknown tool "nope"`)
	assert.Contains(t, body, "known tools: cancel_agent, list_agents, list_panes, post_event, read_file, ", "the known tools are listed")
	status, _ = get("/events", map[string]string{"Authorization": "Bearer alice", "Origin": "https://evil.example"})
	assert.Equal(t, http.StatusForbidden, status)
}

// Without authentication every caller is the local user and sees all.
func TestEventsStreamWithoutAuthSeesEveryCall(t *testing.T) {
	f, _, _ := eventsFront(t, jsonLogs, 0)
	srv := httptest.NewServer(f.EventsHandler(mcpwire.HTTPOptions{Loopback: true}))
	t.Cleanup(srv.Close) // after the streams' contexts end
	frames := subscribeEvents(t, srv.URL+"?tool=wait_for", "")
	callTool(t, f, "carol", "wait_for", waitForArgs)
	assert.Equal(t, "carol", nextFrame(t, frames).Principal)
}

// A shutdown's drain ends the event streams, so the HTTP server need not
// wait for the subscribers to leave.
func TestDrainEndsTheEventStreams(t *testing.T) {
	f, _, _ := eventsFront(t, jsonLogs, 0)
	srv := httptest.NewServer(f.EventsHandler(mcpwire.HTTPOptions{Loopback: true}))
	t.Cleanup(srv.Close)
	frames := subscribeEvents(t, srv.URL, "")
	f.Drain(testContext(t))
	select {
	case _, open := <-frames:
		assert.False(t, open, "no event, the stream ended")
	case <-time.After(30 * time.Second):
		t.Fatal("the stream outlived the drain")
	}
}

// A handler that panics still ends its call: the ended event (outcome
// error, the panic's text as the result) and the end line of its wait go
// out, and the panic goes on to mcp-go's recovery.
func TestAPanickingHandlerPublishesItsEndedEvent(t *testing.T) {
	f, hub, logs := eventsFront(t, jsonLogs, 0)
	sub, end := hub.Subscribe(callevents.Filter{AllPrincipals: true})
	defer end()
	h := f.callEvents(f.tools.of("wait_for"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		noteWait(ctx, "wait_for/abc", waitStarted)
		panic("boom")
	})
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		_, _ = h(testContext(t), mcp.CallToolRequest{})
	}()
	assert.Equal(t, "boom", recovered, "the panic goes on")
	evs := drainEvents(sub)
	require.Len(t, evs, 2, "%+v", evs)
	assert.Equal(t, callevents.TypeStarted, evs[0].Type)
	ended := evs[1]
	assert.Equal(t, callevents.TypeEnded, ended.Type)
	assert.Equal(t, "error", ended.Outcome)
	assert.True(t, ended.IsError)
	assert.Contains(t, ended.Result, "the wait_for handler panicked: boom")
	assert.Contains(t, logs.String(), `"msg":"wait call ended"`)
	assert.Contains(t, logs.String(), `"outcome":"error"`)
}

// taskTemporal is fakeTemporal with what a task's creation reads besides
// the start: the run's description (running) and the namespace (unknown,
// so the default ttl).
type taskTemporal struct{ *fakeTemporal }

func (c taskTemporal) DescribeWorkflowExecution(_ context.Context, id, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: runID},
		StartTime: timestamppb.Now(),
		Status:    enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
	}}, nil
}

func (c taskTemporal) WorkflowService() workflowservice.WorkflowServiceClient { return noNamespace{} }

type noNamespace struct {
	workflowservice.WorkflowServiceClient
}

func (noNamespace) DescribeNamespace(context.Context, *workflowservice.DescribeNamespaceRequest, ...grpc.CallOption) (*workflowservice.DescribeNamespaceResponse, error) {
	return nil, errors.New("no namespace here")
}

// A wait started as an MCP task gets its wait line and its events like a
// plain call: started with the wait's ID, and ended when the task is
// returned (outcome task_created, the task as the result).
func TestATaskCallLogsItsWaitAndPublishesItsEvents(t *testing.T) {
	hub, logs := callevents.NewHub(0), &lockedBuffer{}
	f := New(Options{
		Temporal: taskTemporal{newFakeTemporal()}, TaskQueue: "q",
		Workers:    fakeDownstream{order: []string{"demo"}, tools: map[string][]string{"demo": {"read_file"}}, expose: map[string]bool{"demo": true}},
		CallEvents: CallEventOptions{Hub: hub},
		Logger:     slog.New(jsonLogs(logs)),
	})
	sub, end := hub.Subscribe(callevents.Filter{AllPrincipals: true})
	defer end()
	args, err := json.Marshal(waitForArgs)
	require.NoError(t, err)
	msg := mcpwire.Request{ID: json.RawMessage(`7`), Method: "tools/call",
		Params: json.RawMessage(`{"name":"wait_for","task":{"ttl":1000},"arguments":` + string(args) + `}`)}
	ctx := mcpwire.WithCaller(testContext(t), mcpwire.Caller{Principal: "alice"})
	resp, handled := f.handleOwn(ctx, msg)
	require.True(t, handled)
	_, isErr := resp.(mcp.JSONRPCError)
	require.False(t, isErr, "%#v", resp)

	evs := drainEvents(sub)
	require.Len(t, evs, 2, "%+v", evs)
	assert.Equal(t, callevents.TypeStarted, evs[0].Type)
	assert.True(t, strings.HasPrefix(evs[0].WaitID, workflows.WaitForIDPrefix), evs[0].WaitID)
	assert.Equal(t, "alice", evs[0].Principal)
	assert.Equal(t, callevents.TypeEnded, evs[1].Type)
	assert.Equal(t, workflows.OutcomeTaskCreated, evs[1].Outcome)
	assert.Contains(t, evs[1].Result, evs[0].WaitID+"@run-1", "the task ID names the run")
	assert.Contains(t, logs.String(), `"msg":"wait started or attached"`)
	assert.Contains(t, logs.String(), `"outcome":"task_created"`)
}

// The log lines, the events and the metrics name a call's end alike: a
// caller that went away is client_gone, wait_for_text's error code is its
// outcome, not a plain "error".
func TestCallOutcomeIsOneValueForLogsEventsAndMetrics(t *testing.T) {
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Equal(t, workflows.OutcomeClientGone, callOutcome(gone, newToolTable().of("wait_for"), nil, gone.Err()))
	assert.Equal(t, workflows.OutcomeClientGone, callOutcome(context.Background(), newToolTable().of("wait_for"), nil, context.Canceled))
	assert.Equal(t, workflows.OutcomeError, callOutcome(context.Background(), newToolTable().of("wait_for"), nil, errors.New("boom")))
	paneGone := &mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{
		"error": map[string]any{"code": "pane_not_found", "message": "no pane %9"}}}
	assert.Equal(t, "pane_not_found", callOutcome(context.Background(), newToolTable().of("wait_for_text"), paneGone, nil))
	assert.Equal(t, workflows.OutcomeError, callOutcome(context.Background(), newToolTable().of("wait_for"), mcp.NewToolResultError("bad"), nil))
	matched := &mcp.CallToolResult{StructuredContent: workflows.WaitForResult{Reason: workflows.WaitReasonMatched}}
	assert.Equal(t, "matched", callOutcome(context.Background(), newToolTable().of("wait_for"), matched, nil))
	assert.Equal(t, "ok", callOutcome(context.Background(), newToolTable().of("demo.read_file"), mcp.NewToolResultText("x"), nil))
	// An operator's cancel of wait_for answers reason "failed" and a
	// "cancelled" object: its outcome is cancelled, as DurawaitState and
	// the worker's "wait ended" line say, and as wait_for_text's is.
	f := cancelledFront()
	cancelled := f.cancelledWaitFor(context.Background(), "wait_for/abc", "run-1", 120)
	assert.Equal(t, workflows.OutcomeCancelled, callOutcome(context.Background(), newToolTable().of("wait_for"), cancelled, nil))
	failed := &mcp.CallToolResult{IsError: true, StructuredContent: workflows.WaitForResult{Reason: workflows.WaitReasonFailed}}
	assert.Equal(t, "failed", callOutcome(context.Background(), newToolTable().of("wait_for"), failed, nil), "fail_matches is still failed")
	assert.Equal(t, workflows.OutcomeCancelled, callOutcome(context.Background(), newToolTable().of("wait_for_text"),
		f.cancelledText(context.Background(), "wait_for_text/abc", "run-1"), nil))
}

// A caller at its cap of streams gets 429; a client that hangs up is
// unsubscribed.
func TestEventsStreamCapAndDisconnect(t *testing.T) {
	f, hub, _ := eventsFront(t, jsonLogs, 0)
	hub.SetLimits(0, 1)
	srv := httptest.NewServer(f.EventsHandler(mcpwire.HTTPOptions{Loopback: true, Authenticate: tokenAuth}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(testContext(t))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer alice")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err = bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)

	second, err := http.NewRequestWithContext(testContext(t), http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	second.Header.Set("Authorization", "Bearer alice")
	refused, err := http.DefaultClient.Do(second)
	require.NoError(t, err)
	refused.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, refused.StatusCode)
	subscribeEvents(t, srv.URL, "bob") // another caller has a place of its own

	require.Equal(t, 2, hub.Subscribers())
	cancel()
	resp.Body.Close()
	require.Eventually(t, func() bool { return hub.Subscribers() == 1 }, 10*time.Second, 10*time.Millisecond, "alice's hang-up unsubscribed her")
}

// With no subscriber, a call builds no progress or ended event (a
// result's JSON can be megabytes); only its started event is numbered.
func TestNoEventWorkWithoutASubscriber(t *testing.T) {
	f, hub, logs := eventsFront(t, jsonLogs, 0)
	callTool(t, f, "alice", "wait_for", waitForArgs)
	assert.Contains(t, logs.String(), `"msg":"wait call ended"`, "the log lines are written regardless")
	sub, end := hub.Subscribe(callevents.Filter{AllPrincipals: true})
	defer end()
	hub.Publish(callevents.Event{Type: callevents.TypeStarted, Tool: "wait_for", CallID: "sentinel"})
	evs := drainEvents(sub)
	require.Len(t, evs, 1)
	assert.Equal(t, uint64(2), evs[0].Seq, "one event (started) was published before")
}

// A result's <, > and & count as one character each, as the caller got
// them.
func TestResultIsNotHTMLEscaped(t *testing.T) {
	text, err := resultJSON(mcp.NewToolResultText("<a&b>"))
	require.NoError(t, err)
	assert.Contains(t, text, `"text":"<a&b>"`)
}

func TestUnescapeHTMLKeepsOtherEscapes(t *testing.T) {
	b, err := json.Marshal(`<\u003c&"`)
	require.NoError(t, err)
	got := unescapeHTML(b)
	assert.Equal(t, `"<\\u003c&\""`, got, "an escaped backslash stays one")
	var back string
	require.NoError(t, json.Unmarshal([]byte(got), &back))
	assert.Equal(t, `<\u003c&"`, back)
}

// A stream whose token is revoked (or a JWT that expires) ends at the next
// heartbeat, saying why.
func TestEventsStreamEndsWhenItsCredentialsGo(t *testing.T) {
	f, _, _ := eventsFront(t, jsonLogs, 0)
	f.opts.CallEvents.Heartbeat = 20 * time.Millisecond
	var revoked sync.Map
	auth := func(w http.ResponseWriter, r *http.Request) (string, bool) {
		p, ok := tokenAuth(w, r)
		if ok {
			if _, gone := revoked.Load(p); gone {
				http.Error(w, "revoked", http.StatusUnauthorized)
				return "", false
			}
		}
		return p, ok
	}
	srv := httptest.NewServer(f.EventsHandler(mcpwire.HTTPOptions{Loopback: true, Authenticate: auth}))
	t.Cleanup(srv.Close)
	req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer alice")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	revoked.Store("alice", true)
	body, err := io.ReadAll(resp.Body) // ends when the stream does
	require.NoError(t, err)
	assert.Contains(t, string(body), ": the stream's credentials are no longer valid")
}

// DNS rebinding: a page on evil.example whose name now resolves to
// 127.0.0.1 calls the listener "same-origin", with no Origin header but
// with its own name in Host. Without authentication both /mcp and /events
// refuse it; a loopback name, an allowed origin's host, or any Host once
// callers authenticate, is let through.
func TestHostCheckAgainstDNSRebinding(t *testing.T) {
	f, _, _ := eventsFront(t, jsonLogs, 0)
	open := mcpwire.HTTPOptions{Loopback: true, AllowedOrigins: []string{"https://app.example.com"}}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpwire.NewHTTPHandler(f.Served(), "/mcp", open))
	mux.Handle("/events", f.EventsHandler(open))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	authed := httptest.NewServer(f.EventsHandler(mcpwire.HTTPOptions{Loopback: true, Authenticate: tokenAuth}))
	t.Cleanup(authed.Close)

	status := func(base, path, host string) int {
		t.Helper()
		ctx, cancel := context.WithCancel(testContext(t))
		defer cancel() // ends an event stream once its status is read
		method, body := http.MethodGet, io.Reader(nil)
		if path == "/mcp" {
			method, body = http.MethodPost, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		}
		req, err := http.NewRequestWithContext(ctx, method, base+path, body)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer alice")
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/mcp", "/events"} {
		for _, host := range []string{"evil.example:8765", "evil.example", "127.0.0.1.evil.example", "localhost.evil.example:1"} {
			assert.Equal(t, http.StatusForbidden, status(srv.URL, path, host), "%s with Host %s", path, host)
		}
		for _, host := range []string{"localhost:8765", "LOCALHOST", "mcp.localhost:1", "127.0.0.1:8765", "[::1]:8765", "app.example.com"} {
			assert.Equal(t, http.StatusOK, status(srv.URL, path, host), "%s with Host %s", path, host)
		}
	}
	assert.Equal(t, http.StatusOK, status(authed.URL, "/events", "durawait.example.com"), "with authentication any Host is fine")
}

// A wait's log lines carry its call's trace ID, so a line leads to the
// call's trace in the tracing backend.
func TestWaitLogLinesCarryTheCallsTraceID(t *testing.T) {
	tc, feed := newFakeTemporal(), samplehub.New()
	tc.onStart = func(run *fakeRun) {
		feed.Observe(run.id, workflows.WaitForResult{Reason: workflows.WaitReasonMatched, Condition: workflows.ConditionMatches,
			LastObservation: "READY", Samples: 1, EffectiveMaxWaitSec: 60})
	}
	logs := &lockedBuffer{}
	spans := tracetest.NewSpanRecorder()
	f := New(Options{
		Temporal: tc, Events: feed, TaskQueue: "q",
		Workers:   fakeDownstream{order: []string{"demo"}, tools: map[string][]string{"demo": {"read_file"}}},
		Logger:    slog.New(jsonLogs(logs)),
		Telemetry: Telemetry{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))},
	})
	callTool(t, f, "alice", "wait_for", waitForArgs)

	require.NotEmpty(t, spans.Ended())
	want := spans.Ended()[len(spans.Ended())-1].SpanContext().TraceID().String()
	var traced int
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if m["tool"] == "wait_for" {
			assert.Equal(t, want, m["trace_id"], line)
			traced++
		}
	}
	assert.Equal(t, 2, traced, "the wait's start and end lines: %s", logs.String())
}
