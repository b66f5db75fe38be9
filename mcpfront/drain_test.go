package mcpfront

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDrainEndsCallsInFlightAndRefusesNewOnes(t *testing.T) {
	f := &Front{drain: newDrain()}
	entered := make(chan struct{})
	sawDrain := make(chan bool, 1)
	blocking := f.drainable(func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(entered)
		<-ctx.Done()
		sawDrain <- draining(ctx)
		return nil, ctx.Err()
	})
	quick := f.drainable(func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("done"), nil
	})
	res, err := quick(context.Background(), mcp.CallToolRequest{})
	require.NoError(t, err)
	assert.False(t, res.IsError, "before a drain calls run as ever")

	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := blocking(context.Background(), mcp.CallToolRequest{})
		got <- answer{res, err}
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f.Drain(ctx)
	require.NoError(t, ctx.Err(), "Drain returns once the calls in flight have")
	a := <-got
	require.NoError(t, a.err)
	require.True(t, a.res.IsError)
	assert.Contains(t, a.res.Content[0].(mcp.TextContent).Text, "Call again with the same arguments")
	assert.True(t, <-sawDrain, "the handler can tell a shutdown from a hang-up (wait_for_text keeps its wait)")

	res, err = quick(context.Background(), mcp.CallToolRequest{})
	require.NoError(t, err)
	require.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(mcp.TextContent).Text, "takes no new calls")
}

func TestAClientHangUpIsNotADrain(t *testing.T) {
	f := &Front{drain: newDrain()}
	var sawDrain bool
	h := f.drainable(func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		sawDrain = draining(ctx)
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := h(ctx, mcp.CallToolRequest{})
	assert.ErrorIs(t, err, context.Canceled, "the caller's own cancel passes through")
	assert.False(t, sawDrain, "a hang-up is no drain")
}

// durawait's own requests (the task methods) drain like tool calls, and a
// panic in one is an error, not a crash of the process.
func TestOwnRequestsDrainAndRecover(t *testing.T) {
	f := &Front{drain: newDrain()}
	err := f.drained(context.Background(), func(context.Context) error { panic("boom") })
	assert.ErrorContains(t, err, "internal error: boom")

	entered := make(chan struct{})
	got := make(chan error, 1)
	go func() {
		got <- f.drained(context.Background(), func(ctx context.Context) error {
			close(entered)
			<-ctx.Done()
			return ctx.Err()
		})
	}()
	<-entered
	f.Drain(context.Background())
	assert.ErrorContains(t, <-got, "Call again with the same arguments")
	assert.ErrorContains(t, f.drained(context.Background(), func(context.Context) error { return nil }), "takes no new calls")
}
