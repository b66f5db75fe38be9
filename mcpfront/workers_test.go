package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

// A remote call is a CallDownstreamTool workflow of the caller's own (its
// ID scoped to the principal, the principal in its memo), read as a
// sentence in the UI, and its answer is the workflow's result.
func TestTemporalWorkersCallToolRunsAWorkflowOfTheCaller(t *testing.T) {
	tc := &mocks.Client{}
	run := &mocks.WorkflowRun{}
	in := workflows.DownstreamCall{Server: "demo", Tool: "read_file", Arguments: json.RawMessage(`{"path":"/x"}`)}
	want := workflows.DownstreamCallResult{Result: json.RawMessage(`{"content":[]}`)}
	var opts client.StartWorkflowOptions
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.CallDownstreamToolWorkflowName, in).
		Run(func(args mock.Arguments) { opts = args.Get(1).(client.StartWorkflowOptions) }).
		Return(run, nil).Once()
	run.On("Get", mock.Anything, mock.Anything).
		Run(func(args mock.Arguments) { *args.Get(1).(*workflows.DownstreamCallResult) = want }).
		Return(nil).Once()

	ctx := mcpwire.WithCaller(context.Background(), mcpwire.Caller{Principal: "alice"})
	out, err := TemporalWorkers{Client: tc, TaskQueue: "q"}.CallTool(ctx, in, nil)
	require.NoError(t, err)
	assert.Equal(t, want, out)
	assert.True(t, strings.HasPrefix(opts.ID, workflows.DownstreamCallIDPrefix), opts.ID)
	assert.True(t, workflows.Owns("alice", opts.ID), opts.ID)
	assert.False(t, workflows.Owns("", opts.ID), opts.ID)
	assert.Equal(t, "q", opts.TaskQueue)
	assert.Equal(t, "call demo.read_file", opts.StaticSummary)
	assert.Equal(t, map[string]any{"principal": "alice"}, opts.Memo)
	tool, _ := opts.TypedSearchAttributes.GetKeyword(workflows.KeyTool)
	assert.Equal(t, "demo.read_file", tool, "DurawaitTool: the re-exposed tool")
	who, _ := opts.TypedSearchAttributes.GetKeyword(workflows.KeyCaller)
	assert.Equal(t, "alice", who)
	tc.AssertExpectations(t)
}

// A caller's cancel cancels the workflow.
func TestTemporalWorkersCancelCancelsTheWorkflow(t *testing.T) {
	tc := &mocks.Client{}
	run := &mocks.WorkflowRun{}
	ctx, cancel := context.WithCancel(context.Background())
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.ListPanesWorkflowName, mock.Anything).Return(run, nil)
	run.On("Get", mock.Anything, mock.Anything).
		Run(func(args mock.Arguments) { cancel(); <-args.Get(0).(context.Context).Done() }).
		Return(context.Canceled)
	run.On("GetID").Return("list_panes/abc")
	run.On("GetRunID").Return("run-1")
	tc.On("CancelWorkflow", mock.Anything, "list_panes/abc", "run-1").Return(nil).Once()

	_, err := TemporalWorkers{Client: tc, TaskQueue: "q"}.ListPanes(ctx, workflows.ListPanesInput{HostQueue: "durawait-tmux-b"})
	require.ErrorIs(t, err, context.Canceled)
	tc.AssertExpectations(t)
}

// flakyWorkers serves a catalog until it fails.
type flakyWorkers struct {
	fakeDownstream
	fail bool
}

func (w *flakyWorkers) Catalog(ctx context.Context) (workflows.DownstreamCatalog, error) {
	if w.fail {
		return workflows.DownstreamCatalog{}, errors.New("no worker answered")
	}
	return w.fakeDownstream.Catalog(ctx)
}

func listedNames(t *testing.T, f *Front) []string {
	t.Helper()
	resp := f.mcp.HandleMessage(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	res, ok := resp.(mcp.JSONRPCResponse)
	require.True(t, ok, "%#v", resp)
	var names []string
	for _, tool := range res.Result.(mcp.ListToolsResult).Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	return names
}

// While the workers' catalog cannot be read, the tool list stays as it was.
func TestRefreshKeepsTheToolsWhileTheCatalogIsUnreadable(t *testing.T) {
	w := &flakyWorkers{fakeDownstream: fakeDownstream{
		order: []string{"k8s"}, tools: map[string][]string{"k8s": {"kubectl_get"}}, expose: map[string]bool{"k8s": true},
	}}
	f := New(Options{Workers: w})
	assert.Equal(t, []string{"kubectl_get", "post_event", "wait_for", "wait_for_event"}, listedNames(t, f))
	w.fail = true
	f.Refresh(context.Background())
	assert.Equal(t, []string{"kubectl_get", "post_event", "wait_for", "wait_for_event"}, listedNames(t, f))
	assert.Equal(t, map[string]string{"k8s": "connected"}, f.DownstreamStatus())

	// A re-exposed call answers at once that no worker answers, instead of
	// waiting for one until its bound; it goes through again once one does.
	call := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"kubectl_get","arguments":{}}}`)
	res := f.mcp.HandleMessage(context.Background(), call).(mcp.JSONRPCResponse).Result.(*mcp.CallToolResult)
	require.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(mcp.TextContent).Text, "no durawait worker answers on task queue")
	w.fail = false
	f.Refresh(context.Background())
	res = f.mcp.HandleMessage(context.Background(), call).(mcp.JSONRPCResponse).Result.(*mcp.CallToolResult)
	assert.Contains(t, res.Content[0].(mcp.TextContent).Text, "not used", "the call reached the workers")
}

// With no tmux host queue published, the tmux tools answer tmux_unavailable
// at once instead of starting anything.
func TestTmuxToolsWithoutATmuxWorkerAreUnavailable(t *testing.T) {
	f := New(Options{Workers: fakeDownstream{}, TaskQueue: "q", Tmux: TmuxOptions{ListPanes: true, WaitForText: true}})
	for _, call := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_panes","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait_for_text","arguments":{"target":{"paneId":"%1","generation":"g1:ab"},"text":"x"}}}`,
	} {
		resp := f.mcp.HandleMessage(context.Background(), []byte(call))
		res, ok := resp.(mcp.JSONRPCResponse)
		require.True(t, ok, "%#v", resp)
		result := res.Result.(*mcp.CallToolResult)
		assert.True(t, result.IsError)
		text, _ := json.Marshal(result.StructuredContent)
		assert.Contains(t, string(text), `"code":"tmux_unavailable"`)
		assert.Contains(t, string(text), "task queue q")
	}
}
