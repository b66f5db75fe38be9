package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/durawait/durawait/workflows"
)

// fakeServers is one downstream server, "demo", with fixed tools; call
// answers its calls.
type fakeServers struct {
	tools   []mcp.Tool
	lastErr error
	// hidden makes "demo" a server configured expose = false.
	hidden bool
	call   func(ctx context.Context, args any, onProgress func(mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error)
}

func (f fakeServers) ServerNames() []string { return []string{"demo"} }

func (f fakeServers) ServerTools(string) ([]mcp.Tool, bool, error) {
	return f.tools, !f.hidden, f.lastErr
}

func (f fakeServers) CallTool(ctx context.Context, _, _ string, args any, onProgress func(mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	return f.call(ctx, args, onProgress)
}

func decodeResult(t *testing.T, out workflows.DownstreamCallResult) *mcp.CallToolResult {
	t.Helper()
	res, err := mcp.ParseCallToolResult(&out.Result)
	require.NoError(t, err)
	return res
}

// A result over MaxDownstreamResultBytes is replaced by an isError result
// naming the limit; one at the limit passes whole.
func TestCallCapsAnOversizeResult(t *testing.T) {
	var text string
	d := &Downstream{Servers: fakeServers{call: func(context.Context, any, func(mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(text), nil
	}}}
	call := workflows.DownstreamCall{Server: "files", Tool: "read_file"}
	envelope, err := json.Marshal(mcp.NewToolResultText(""))
	require.NoError(t, err)

	text = strings.Repeat("a", workflows.MaxDownstreamResultBytes-len(envelope))
	out, err := d.Call(context.Background(), call, nil)
	require.NoError(t, err)
	require.Len(t, out.Result, workflows.MaxDownstreamResultBytes)
	res := decodeResult(t, out)
	assert.False(t, res.IsError)
	assert.Equal(t, text, res.Content[0].(mcp.TextContent).Text)

	text += "a"
	out, err = d.Call(context.Background(), call, nil)
	require.NoError(t, err)
	res = decodeResult(t, out)
	assert.True(t, res.IsError)
	assert.Equal(t, fmt.Sprintf(`read_file on downstream MCP server "files" ran, but its result is %d bytes of JSON, over durawait's limit of 1048576 bytes (1 MiB) `+
		`for a re-exposed tool's result, so it is not passed on; call it again asking for less (a narrower query, a range, a page)`, workflows.MaxDownstreamResultBytes+1),
		res.Content[0].(mcp.TextContent).Text)
}

func TestCallForwardsArgumentsAndProgress(t *testing.T) {
	var gotArgs any
	d := &Downstream{Servers: fakeServers{call: func(_ context.Context, args any, onProgress func(mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
		gotArgs = args
		onProgress(mcp.ProgressNotificationParams{Progress: 1, Message: "half"})
		res := mcp.NewToolResultStructured(map[string]any{"n": 2}, `{"n":2}`)
		return res, nil
	}}}
	var progress []string
	out, err := d.Call(context.Background(), workflows.DownstreamCall{Server: "demo", Tool: "sum", Arguments: json.RawMessage(`{"a":1}`)},
		func(p mcp.ProgressNotificationParams) { progress = append(progress, p.Message) })
	require.NoError(t, err)
	assert.Equal(t, json.RawMessage(`{"a":1}`), gotArgs, "the arguments go as sent")
	assert.Equal(t, []string{"half"}, progress)
	res := decodeResult(t, out)
	assert.False(t, res.IsError)
	assert.JSONEq(t, `{"n":2}`, string(res.RawStructuredContent))
}

func TestCallWithoutArgumentsSendsNone(t *testing.T) {
	d := &Downstream{Servers: fakeServers{call: func(_ context.Context, args any, _ func(mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
		assert.Nil(t, args)
		return mcp.NewToolResultText("ok"), nil
	}}}
	_, err := d.Call(context.Background(), workflows.DownstreamCall{Server: "demo", Tool: "ping"}, nil)
	require.NoError(t, err)
}

// A downstream failure is the tool's isError answer, worded for the caller.
func TestCallFailuresAreIsErrorResults(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want string
	}{
		"unavailable": {&UnavailableError{Server: "demo", Err: errors.New("connection refused")},
			`downstream MCP server "demo" is unavailable: connection refused`},
		"other": {errors.New("boom"), `calling sum on downstream MCP server "demo" failed: boom`},
	} {
		t.Run(name, func(t *testing.T) {
			d := &Downstream{Servers: fakeServers{call: func(context.Context, any, func(mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
				return nil, tc.err
			}}}
			out, err := d.Call(context.Background(), workflows.DownstreamCall{Server: "demo", Tool: "sum"}, nil)
			require.NoError(t, err)
			res := decodeResult(t, out)
			assert.True(t, res.IsError)
			require.Len(t, res.Content, 1)
			text, ok := mcp.AsTextContent(res.Content[0])
			require.True(t, ok)
			assert.Equal(t, tc.want, text.Text)
		})
	}
}

// The activity heartbeats while the downstream server works, so that a
// cancel reaches the call.
func TestCallDownstreamToolHeartbeatsWhileTheCallRuns(t *testing.T) {
	heartbeat := make(chan struct{}, 1)
	d := &Downstream{Servers: fakeServers{call: func(ctx context.Context, _ any, _ func(mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
		select {
		case <-heartbeat:
			return mcp.NewToolResultText("done"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) {
		select {
		case heartbeat <- struct{}{}:
		default:
		}
	})
	env.RegisterActivityWithOptions(d.CallDownstreamTool, activity.RegisterOptions{Name: workflows.CallDownstreamToolActivityName})
	val, err := env.ExecuteActivity(workflows.CallDownstreamToolActivityName, workflows.DownstreamCall{Server: "demo", Tool: "slow"})
	require.NoError(t, err)
	var out workflows.DownstreamCallResult
	require.NoError(t, val.Get(&out))
	res := decodeResult(t, out)
	assert.False(t, res.IsError, "the call ended after a heartbeat")
}

// The catalog carries each tool with its schemas as its server sent them,
// the probe policy, the last connection error and the tmux host queue.
func TestCatalogSnapshotsTheServers(t *testing.T) {
	const input = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"number"}}}`
	def := mcp.NewToolWithRawSchema("sum", "Adds.", []byte(input))
	d := &Downstream{
		Servers:       fakeServers{tools: []mcp.Tool{def}, lastErr: errors.New("connection reset")},
		ProbeTools:    map[string][]string{"demo": {"sum"}},
		TmuxHostQueue: "durawait-tmux-hostb",
	}
	cat, err := d.Catalog(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "durawait-tmux-hostb", cat.TmuxHostQueue)
	require.Len(t, cat.Servers, 1)
	s := cat.Servers[0]
	assert.Equal(t, "demo", s.Name)
	assert.True(t, s.Expose)
	assert.Equal(t, []string{"sum"}, s.ProbeTools)
	assert.Equal(t, "connection reset", s.Error)
	require.Len(t, s.Tools, 1)
	var tool struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	require.NoError(t, json.Unmarshal(s.Tools[0], &tool))
	assert.Equal(t, "sum", tool.Name)
	assert.JSONEq(t, input, string(tool.InputSchema), "the raw schema, $schema included")
}
