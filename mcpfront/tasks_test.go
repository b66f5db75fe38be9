package mcpfront

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/mocks"

	"github.com/durawait/durawait/workflows"
)

func TestTaskIDsNameTheirRunOrUpdate(t *testing.T) {
	created := time.UnixMilli(1764556800123)
	for _, ref := range []taskRef{
		{workflowID: "wait_for/0123abcd", runID: "01a22f9d-22db-78df-8c8d-f95ebd3d0f02"},
		{workflowID: "wait_for_text/99ff", runID: "r"},
		{workflowID: "agent/2e66", updateID: newAgentTaskUpdateID(created)},
	} {
		got, err := parseTaskID(ref.String())
		require.NoError(t, err, ref.String())
		assert.Equal(t, ref, got)
	}
	agent, _ := parseTaskID("agent/2e66#" + newAgentTaskUpdateID(created))
	assert.Equal(t, "wait_agent", agent.tool())
	assert.True(t, agentTaskCreated(agent.updateID).Equal(created))
	text, _ := parseTaskID("wait_for_text/99ff@r")
	assert.Equal(t, "wait_for_text", text.tool())
	wait, _ := parseTaskID("wait_for/0123@r")
	assert.Equal(t, "wait_for", wait.tool())

	for _, bad := range []string{"", "wait_for/0123", "@run", "wait_for/0123@", "agent/2e66#not-a-task-update"} {
		_, err := parseTaskID(bad)
		assert.ErrorContains(t, err, "taskId", bad)
	}
}

func TestTaskRequestsDurawaitAnswersItself(t *testing.T) {
	f := New(Options{Workers: fakeDownstream{}})
	request := func(method, params string) rpcMessage {
		msg, ok := parseRPC([]byte(`{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + params + `}`))
		require.True(t, ok)
		return msg
	}
	errorOf := func(t *testing.T, msg rpcMessage, modern bool) mcp.JSONRPCErrorDetails {
		t.Helper()
		resp, handled := f.handleOwn(context.Background(), msg, modern)
		require.True(t, handled)
		e, ok := resp.(mcp.JSONRPCError)
		require.True(t, ok, "a JSON-RPC error: %#v", resp)
		return e.Error
	}

	// Protocol 2026-07-28 has no 2025-11-25 task methods.
	e := errorOf(t, request("tasks/get", `{"taskId":"wait_for/x@y"}`), true)
	assert.Equal(t, mcp.METHOD_NOT_FOUND, e.Code)
	assert.Contains(t, e.Message, "call it again with the same arguments to re-attach")

	// Only the waiting tools run as tasks.
	e = errorOf(t, request("tools/call", `{"name":"read_file","arguments":{},"task":{"ttl":1000}}`), false)
	assert.Equal(t, mcp.METHOD_NOT_FOUND, e.Code)
	assert.Contains(t, e.Message, `tool "read_file" does not run as a task`)

	// A task ID durawait never returned is refused before Temporal is asked.
	e = errorOf(t, request("tasks/result", `{"taskId":"nonsense"}`), false)
	assert.Equal(t, mcp.INVALID_PARAMS, e.Code)
	assert.Contains(t, e.Message, `taskId: "nonsense" is not a task ID that durawait returned`)

	// Everything else is mcp-go's: plain calls, and the modern era's calls.
	_, handled := f.handleOwn(context.Background(), request("tools/call", `{"name":"wait_for","arguments":{}}`), false)
	assert.False(t, handled)
	_, handled = f.handleOwn(context.Background(), request("tools/call", `{"name":"wait_for","arguments":{},"task":{}}`), true)
	assert.False(t, handled)
	_, handled = f.handleOwn(context.Background(), request("tools/list", `{}`), false)
	assert.False(t, handled)
}

func TestModernCallsDropTheLegacyTaskParam(t *testing.T) {
	out, ok := withoutTaskParam([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait_for","arguments":{"a":1},"task":{"ttl":5}}}`))
	require.True(t, ok)
	var got map[string]any
	require.NoError(t, json.Unmarshal(out, &got))
	assert.Equal(t, map[string]any{"name": "wait_for", "arguments": map[string]any{"a": float64(1)}}, got["params"])
	_, ok = withoutTaskParam([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait_for"}}`))
	assert.False(t, ok, "nothing to drop")

	call := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait_for","task":{}}}`)
	msg, _ := parseRPC(call)
	_, changed := forMCPGo(msg, call, false)
	assert.False(t, changed, "a 2025-11-25 task call is durawait's own (handleOwn), never rewritten")
	plain, changed := forMCPGo(msg, call, true)
	assert.True(t, changed)
	assert.NotContains(t, string(plain), `"task"`)
	list := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"task":{}}}`)
	msg, _ = parseRPC(list)
	_, changed = forMCPGo(msg, list, true)
	assert.False(t, changed, "only tools/call")
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
	c := &toolCall{f: f, tool: "wait_agent", id: newCallID(), begun: time.Now()}
	ctx := context.WithValue(context.Background(), toolCallKey{}, c)
	req := mcp.CallToolRequest{}
	req.Params.Name = "wait_agent"
	req.Params.Arguments = map[string]any{"invocation_id": workflows.InvocationID("", [16]byte{1})}

	_, err := f.createTask(ctx, req)
	require.Error(t, err)
	assert.Empty(t, c.waitID, "no wait to attach to")
	assert.NotContains(t, logs.String(), "wait attached")
}
