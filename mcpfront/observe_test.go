package mcpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

// events iterates over a fixed history.
type events struct{ list []*historypb.HistoryEvent }

func (e *events) HasNext() bool { return len(e.list) > 0 }
func (e *events) Next() (*historypb.HistoryEvent, error) {
	ev := e.list[0]
	e.list = e.list[1:]
	return ev, nil
}

// cancelledHistory is a run started at t0 that an operator cancelled 12 s
// later.
func cancelledHistory(t0 time.Time) client.HistoryEventIterator {
	return &events{list: []*historypb.HistoryEvent{
		{EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, EventTime: timestamppb.New(t0)},
		{EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED, EventTime: timestamppb.New(t0.Add(12 * time.Second)),
			Attributes: &historypb.HistoryEvent_WorkflowExecutionCancelRequestedEventAttributes{
				WorkflowExecutionCancelRequestedEventAttributes: &historypb.WorkflowExecutionCancelRequestedEventAttributes{
					Identity: "operator-alice", Cause: "the deploy was rolled back",
				}}},
	}}
}

// validates checks a result's structured content against a tool's output
// schema.
func validates(t *testing.T, schema []byte, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("output.json", doc))
	s, err := c.Compile("output.json")
	require.NoError(t, err)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	require.NoError(t, s.Validate(v), "the output schema validates %s", raw)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

// cancelledFront is a Front whose Temporal holds, for any workflow, the
// history of a run an operator-alice cancelled 12 s after it started.
func cancelledFront() *Front {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tc := &mocks.Client{}
	tc.On("GetWorkflowHistory", mock.Anything, mock.Anything, mock.Anything, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT).
		Return(func(context.Context, string, string, bool, enumspb.HistoryEventFilterType) client.HistoryEventIterator {
			return cancelledHistory(t0)
		})
	return New(Options{Temporal: tc, TaskQueue: "q"})
}

// An operator's cancel answers each tool with a result its output schema
// validates, naming who cancelled and why.
func TestAnOperatorsCancelIsAStructuredResultEachSchemaValidates(t *testing.T) {
	f := cancelledFront()

	res := f.cancelledWaitFor(context.Background(), "wait_for/abc", "run-1", 120)
	assert.True(t, res.IsError)
	out := validates(t, waitForOutputSchema, res)
	assert.Equal(t, "failed", out["reason"])
	assert.NotContains(t, out, "condition", "no condition: not a fail_matches failure")
	assert.Equal(t, 12.0, out["elapsed_sec"])
	assert.Equal(t, map[string]any{"by": "operator-alice", "cause": "the deploy was rolled back", "at": "2026-12-01T10:00:12Z"}, out["cancelled"])
	text, _ := mcp.AsTextContent(res.Content[0])
	assert.Equal(t, "wait_for: the wait was cancelled by operator-alice (the deploy was rolled back); it did not reach its condition. Call again to start a new wait.", text.Text)

	res = f.cancelledText(context.Background(), "wait_for_text/abc", "run-1")
	assert.True(t, res.IsError)
	out = validates(t, waitForTextOutputSchema, res)
	assert.Equal(t, map[string]any{"code": "cancelled", "message": "the wait was cancelled by operator-alice (the deploy was rolled back)",
		"effects": "none", "retryable": false}, out["error"])

	partial := "half done"
	res = structuredResult(f.cancelledInvocation(context.Background(), "agent/abc",
		temporal.NewCanceledError(workflows.InvocationPayload{InvocationID: "agent/abc", Status: workflows.AgentCancelled, ElapsedMs: 12000, Output: &partial})))
	out = validates(t, invocationOutputSchema, res)
	assert.Equal(t, "cancelled", out["status"])
	assert.Equal(t, "finished", out["reason"])
	assert.Equal(t, 12000.0, out["elapsed_ms"])
	assert.Equal(t, "half done", out["output"], "the output so far, from the cancellation's details")
	assert.Equal(t, map[string]any{"code": "cancelled", "message": "the invocation was cancelled by operator-alice (the deploy was rolled back)"}, out["error"])
}

// A wait starts with its tool, caller, session, client and probe tool as
// search attributes, a summary within 200 bytes, Markdown details, and a
// memo in wait_for's own argument names.
func TestAWaitStartsWithItsSearchAttributesSummaryAndMemo(t *testing.T) {
	f := New(Options{TaskQueue: "q", Workers: fakeDownstream{order: []string{"demo"}, tools: map[string][]string{"demo": {"read_file"}}}})
	f.clients.m.Store("sess-1", "claude-code/2.1")
	ctx := mcpwire.WithCaller(context.Background(), mcpwire.Caller{Session: "sess-1~call-7", Principal: "alice"})
	req := mcp.CallToolRequest{}
	req.Params.Name = "wait_for"
	req.Params.Arguments = map[string]any{
		"probe": map[string]any{"tool": "demo.read_file", "args": map[string]any{}},
		"until": map[string]any{"matches": "READY"}, "poll_sec": 2, "max_wait_sec": 300,
	}
	w, bad := f.prepareWaitFor(ctx, req)
	require.Nil(t, bad)
	get := func(k temporal.SearchAttributeKeyKeyword) string {
		v, _ := w.attrs.GetKeyword(k)
		return v
	}
	assert.Equal(t, "wait_for", get(workflows.KeyTool))
	assert.Equal(t, "alice", get(workflows.KeyCaller))
	assert.Equal(t, "sess-1", get(workflows.KeySession), "the client's session, not one request's")
	assert.Equal(t, "claude-code/2.1", get(workflows.KeyClient))
	assert.Equal(t, "demo.read_file", get(workflows.KeyProbeTool))
	// It starts running (one visibility write and one history event less
	// than upserting it); workers of this release and the previous one
	// upsert how it ended.
	assert.Equal(t, "running", get(workflows.KeyState))
	assert.Equal(t, `wait_for read_file until matches "READY" (every 2 s, ≤300 s)`, w.summary)
	assert.Contains(t, w.details, "### wait_for")
	assert.Equal(t, map[string]any{"matches": "READY"}, w.memo["until"])
	assert.Equal(t, "alice", w.memo["principal"])

	// Over the stateless protocol the client names itself in _meta.
	req.Params.Meta = &mcp.Meta{}
	req.Params.Meta.SetClientInfo(mcp.Implementation{Name: "codex", Version: "0.9"})
	w, _ = f.prepareWaitFor(mcpwire.WithCaller(context.Background(), mcpwire.Caller{}), req)
	v, _ := w.attrs.GetKeyword(workflows.KeyClient)
	assert.Equal(t, "codex/0.9", v)
	v, _ = w.attrs.GetKeyword(workflows.KeyCaller)
	assert.Equal(t, "anonymous", v)
	_, hasSession := w.attrs.GetKeyword(workflows.KeySession)
	assert.False(t, hasSession)
}

// On stdio, which has no session ID, a wait has no DurawaitSession (as its
// log lines and events have no session), yet its client is still named
// from the stdio session's initialize.
func TestAStdioWaitHasNoSessionButItsClient(t *testing.T) {
	f := New(Options{TaskQueue: "q", Workers: fakeDownstream{order: []string{"demo"}, tools: map[string][]string{"demo": {"read_file"}}}})
	sess := stdioLikeSession{}
	f.clients.m.Store(sess.SessionID(), "claude-code/2.1")
	ctx := f.mcp.WithContext(mcpwire.WithCaller(context.Background(), mcpwire.Caller{}), sess)
	req := mcp.CallToolRequest{}
	req.Params.Name = "wait_for"
	req.Params.Arguments = map[string]any{
		"probe": map[string]any{"tool": "demo.read_file", "args": map[string]any{}},
		"until": map[string]any{"matches": "READY"}, "poll_sec": 2, "max_wait_sec": 300,
	}
	w, bad := f.prepareWaitFor(ctx, req)
	require.Nil(t, bad)
	_, hasSession := w.attrs.GetKeyword(workflows.KeySession)
	assert.False(t, hasSession, "not mcp-go's stdio session ID")
	v, _ := w.attrs.GetKeyword(workflows.KeyClient)
	assert.Equal(t, "claude-code/2.1", v)
	v, _ = w.attrs.GetKeyword(workflows.KeyCaller)
	assert.Equal(t, "anonymous", v)
}

// A task-augmented wait_for or wait_for_text an operator cancelled answers
// with the same structured result as a plain call: who cancelled, and for
// wait_for its max_wait_sec read from the run's start.
func TestAnOperatorsCancelOfATaskIsTheStructuredResult(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	input, err := converter.GetDefaultDataConverter().ToPayloads(workflows.WaitForInput{Spec: workflows.WaitForSpec{MaxWaitSec: 300}})
	require.NoError(t, err)
	tc := &mocks.Client{}
	tc.On("GetWorkflowHistory", mock.Anything, mock.Anything, "run-1", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT).
		Return(func(context.Context, string, string, bool, enumspb.HistoryEventFilterType) client.HistoryEventIterator {
			h := cancelledHistory(t0).(*events)
			h.list[0].Attributes = &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{
				WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{Input: input}}
			return h
		})
	run := &mocks.WorkflowRun{}
	run.On("Get", mock.Anything, mock.Anything).Return(temporal.NewCanceledError())
	tc.On("GetWorkflow", mock.Anything, mock.Anything, "run-1").Return(run)
	f := New(Options{Temporal: tc, TaskQueue: "q"})

	res := f.runAnswer(context.Background(), taskRef{workflowID: workflows.WaitForIDPrefix + "abc", runID: "run-1"})
	assert.True(t, res.IsError)
	out := validates(t, waitForOutputSchema, res)
	assert.Equal(t, 300.0, out["effective_max_wait_sec"])
	assert.Equal(t, "operator-alice", out["cancelled"].(map[string]any)["by"])

	res = f.runAnswer(context.Background(), taskRef{workflowID: workflows.WaitForTextIDPrefix + "abc", runID: "run-1"})
	assert.True(t, res.IsError)
	out = validates(t, waitForTextOutputSchema, res)
	assert.Equal(t, "cancelled", out["error"].(map[string]any)["code"])
	assert.Equal(t, "operator-alice", out["cancelled"].(map[string]any)["by"])
}

// The cancelled object is declared in the output schemas, not only let
// through by their open extra properties.
func TestTheOutputSchemasDeclareCancelled(t *testing.T) {
	var wf struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(waitForOutputSchema, &wf))
	assert.Contains(t, wf.Properties, "cancelled")
	var wft struct {
		AnyOf []struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"anyOf"`
	}
	require.NoError(t, json.Unmarshal(waitForTextOutputSchema, &wft))
	require.Len(t, wft.AnyOf, 2)
	assert.Contains(t, wft.AnyOf[1].Properties, "error")
	assert.Contains(t, wft.AnyOf[1].Properties, "cancelled")
}

// stdioLikeSession is a client session as the stdio transport registers
// one with mcp-go: one per connection, its ID not a transport's session ID.
type stdioLikeSession struct{}

func (stdioLikeSession) SessionID() string                                   { return "stdio" }
func (stdioLikeSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (stdioLikeSession) Initialize()                                         {}
func (stdioLikeSession) Initialized() bool                                   { return true }
