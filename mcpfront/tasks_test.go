package mcpfront

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/mocks"

	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

func TestTaskIDsNameTheirRunOrUpdate(t *testing.T) {
	own := newToolTable()
	created := time.UnixMilli(1764556800123)
	for _, ref := range []taskRef{
		{workflowID: "wait_for/0123abcd", runID: "01a22f9d-22db-78df-8c8d-f95ebd3d0f02"},
		{workflowID: "wait_for_text/99ff", runID: "r"},
		{workflowID: "agent/2e66", updateID: newAgentTaskUpdateID(created)},
	} {
		got, err := own.parseTaskID(ref.String())
		require.NoError(t, err, ref.String())
		assert.Equal(t, ref, got)
	}
	agent, _ := own.parseTaskID("agent/2e66#" + newAgentTaskUpdateID(created))
	assert.Equal(t, "wait_agent", own.ofWorkflow(agent.workflowID).name)
	assert.True(t, agentTaskCreated(agent.updateID).Equal(created))
	text, _ := own.parseTaskID("wait_for_text/99ff@r")
	assert.Equal(t, "wait_for_text", own.ofWorkflow(text.workflowID).name)
	wait, _ := own.parseTaskID("wait_for/0123@r")
	assert.Equal(t, "wait_for", own.ofWorkflow(wait.workflowID).name)

	for _, bad := range []string{"", "wait_for/0123", "@run", "wait_for/0123@", "agent/2e66#not-a-task-update", "call/x@r", "wait_for/@r", "wait_for/a#b@r"} {
		_, err := own.parseTaskID(bad)
		assert.ErrorContains(t, err, "taskId", bad)
	}
}

func TestTaskRequestsDurawaitAnswersItself(t *testing.T) {
	f := New(Options{Workers: fakeDownstream{}})
	request := func(method, params string) mcpwire.Request {
		return mcpwire.Request{ID: json.RawMessage(`7`), Method: method, Params: json.RawMessage(params)}
	}
	modern := func(r mcpwire.Request) mcpwire.Request {
		r.Modern = true
		return r
	}
	errorOf := func(t *testing.T, msg mcpwire.Request) mcp.JSONRPCErrorDetails {
		t.Helper()
		resp, handled := f.handleOwn(context.Background(), msg)
		require.True(t, handled)
		e, ok := resp.(mcp.JSONRPCError)
		require.True(t, ok, "a JSON-RPC error: %#v", resp)
		return e.Error
	}

	// Protocol 2026-07-28 has no 2025-11-25 task methods of its own: its
	// tasks are an extension, whose methods need the extension declared
	// in the request itself.
	declared := `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	e := errorOf(t, modern(request("tasks/result", `{"taskId":"wait_for/x@y",`+declared+`}`)))
	assert.Equal(t, mcp.METHOD_NOT_FOUND, e.Code)
	assert.Contains(t, e.Message, "reads a task and its result with tasks/get")
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		e = errorOf(t, modern(request(method, `{"taskId":"wait_for/x@y"}`)))
		assert.Equal(t, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, e.Code, method)
		assert.Contains(t, e.Message, "does not declare the io.modelcontextprotocol/tasks extension", method)
		assert.Equal(t, map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}}, e.Data, method)
	}
	e = errorOf(t, modern(request("tasks/get", `{"taskId":"nonsense",`+declared+`}`)))
	assert.Equal(t, mcp.INVALID_PARAMS, e.Code)
	assert.Contains(t, e.Message, `taskId: "nonsense" is not a task ID that durawait returned`)

	// Only the waiting tools run as tasks.
	e = errorOf(t, request("tools/call", `{"name":"read_file","arguments":{},"task":{"ttl":1000}}`))
	assert.Equal(t, mcp.METHOD_NOT_FOUND, e.Code)
	assert.Contains(t, e.Message, `tool "read_file" does not run as a task`)

	// A task ID durawait never returned is refused before Temporal is asked.
	e = errorOf(t, request("tasks/result", `{"taskId":"nonsense"}`))
	assert.Equal(t, mcp.INVALID_PARAMS, e.Code)
	assert.Contains(t, e.Message, `taskId: "nonsense" is not a task ID that durawait returned`)

	// Everything else is mcp-go's: plain calls, the modern era's calls of
	// a client that did not declare the extension (its 2025-11-25
	// params.task means nothing there), and a declared call of a tool that
	// does not run as a task.
	_, handled := f.handleOwn(context.Background(), request("tools/call", `{"name":"wait_for","arguments":{}}`))
	assert.False(t, handled)
	_, handled = f.handleOwn(context.Background(), modern(request("tools/call", `{"name":"wait_for","arguments":{},"task":{}}`)))
	assert.False(t, handled)
	_, handled = f.handleOwn(context.Background(), modern(request("tools/call", `{"name":"list_panes","arguments":{},`+declared+`}`)))
	assert.False(t, handled)
	_, handled = f.handleOwn(context.Background(), request("tools/list", `{}`))
	assert.False(t, handled)
}

// A task-augmented wait_agent on an invocation that does not exist is
// attached to nothing: the call logs no wait line and counts no attach,
// as a plain wait_agent call (the attach is noted once the invocation
// accepted the wait).
func TestAWaitAgentTaskOnAnUnknownInvocationAttachesToNothing(t *testing.T) {
	tc := &mocks.Client{}
	notFound := serviceerror.NewNotFound("workflow not found")
	tc.On("UpdateWorkflow", mock.Anything, mock.Anything).Return(nil, notFound)
	tc.On("DescribeWorkflowExecution", mock.Anything, mock.Anything, "").Return(nil, notFound)
	logs := &lockedBuffer{}
	f := New(Options{Temporal: tc, TaskQueue: "q", Logger: slog.New(slog.NewTextHandler(logs, nil))})
	c := &toolCall{f: f, spec: f.tools.of("wait_agent"), id: newCallID(), begun: time.Now()}
	ctx := context.WithValue(context.Background(), toolCallKey{}, c)
	req := mcp.CallToolRequest{}
	req.Params.Name = "wait_agent"
	req.Params.Arguments = map[string]any{"invocation_id": workflows.InvocationID("", [16]byte{1})}

	_, err := f.createTask(ctx, req)
	require.Error(t, err)
	assert.Empty(t, c.waitID, "no wait to attach to")
	assert.NotContains(t, logs.String(), "wait attached")
}

// The wire hands the task methods to the front (Served.Own): tasks/get over
// real HTTP is answered by the front's own rules, not mcp-go's in-memory
// tasks.
func TestTaskMethodsReachTheFrontOverHTTP(t *testing.T) {
	f := New(Options{Workers: fakeDownstream{}})
	srv := httptest.NewServer(mcpwire.NewHTTPHandler(f.Served(), "/mcp", mcpwire.HTTPOptions{Loopback: true}))
	t.Cleanup(srv.Close)
	post := func(session, body string) (string, string) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b), resp.Header.Get("Mcp-Session-Id")
	}
	_, session := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	require.NotEmpty(t, session)
	body, _ := post(session, `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"nonsense"}}`)
	assert.Contains(t, body, `taskId: \"nonsense\" is not a task ID that durawait returned`)
	assert.Contains(t, body, `"code":-32602`)
}

// The tool table is durawait's own tools, in their order, each with a
// handler, and only task tools name the kind of their tasks' workflows.
func TestTheToolTableIsDurawaitsOwnTools(t *testing.T) {
	specs := ownTools()
	var names []string
	for _, s := range specs {
		names = append(names, s.name)
		assert.NotNil(t, s.handle, s.name)
		assert.Equal(t, s.task, s.idPrefix != "", "%s: a task tool, and only one, names its tasks' workflow kind", s.name)
		assert.Equal(t, s.task, s.runAnswer != nil, "%s: a task tool answers its tasks' runs", s.name)
	}
	assert.Equal(t, workflows.OwnTools(), names)
	assert.NotPanics(t, func() { newToolTable() })
	table := newToolTable()
	assert.Equal(t, "wait_for_text", table.ofWorkflow(workflows.WaitForTextIDPrefix+"x").name)
	assert.Equal(t, "wait_for", table.ofWorkflow(workflows.WaitForIDPrefix+"x").name)
	assert.Equal(t, "wait_agent", table.ofWorkflow(workflows.AgentIDPrefix+"x").name)
	assert.Nil(t, table.ofWorkflow(workflows.DownstreamCallIDPrefix+"x"))
	unknown := table.of("demo.read_file")
	assert.Equal(t, "demo.read_file", unknown.name)
	assert.False(t, unknown.task || unknown.wait || unknown.startsWait, "a re-exposed tool waits on nothing")
}
