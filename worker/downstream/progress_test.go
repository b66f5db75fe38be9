package downstream

import (
	"context"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A forwarded call with a progress callback receives the server's progress
// notifications for that call. mcp-go's server may write a notification
// after the call's result (too late for any caller), so this asks for at
// least one, in order; the end-to-end test covers SSE with the TypeScript
// SDK's server.
func TestCallToolDeliversProgress(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	m := NewManager([]ServerConfig{
		{Name: "http", URL: httpServer(t)},
	}, Options{}, testLogger())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	require.NoError(t, m.WaitReady(ctx))

	for _, server := range m.ServerNames() {
		var mu sync.Mutex
		var got []mcp.ProgressNotificationParams
		res, err := m.CallTool(ctx, server, "progress", map[string]any{}, func(p mcp.ProgressNotificationParams) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, p)
		})
		require.NoError(t, err, server)
		assert.Equal(t, "done", Observation(res))
		mu.Lock()
		require.NotEmpty(t, got, server)
		for i, p := range got {
			if i > 0 {
				assert.Greater(t, p.Progress, got[i-1].Progress, server)
			}
			assert.Equal(t, float64(3), p.Total, server)
			assert.Contains(t, p.Message, "step", server)
		}
		mu.Unlock()
	}
}

func TestProgressRoutesDeliverByToken(t *testing.T) {
	var p progressRoutes
	var got []mcp.ProgressNotificationParams
	token, remove := p.add("s", func(n mcp.ProgressNotificationParams) { got = append(got, n) })
	other, _ := p.add("s", func(mcp.ProgressNotificationParams) { t.Error("delivered to another call") })
	assert.NotEqual(t, token, other, "tokens are unique per call")

	note := func(method string, fields map[string]any) mcp.JSONRPCNotification {
		n := mcp.JSONRPCNotification{}
		n.Method = method
		n.Params.AdditionalFields = fields
		return n
	}
	p.deliver(note("notifications/progress", map[string]any{"progressToken": token, "progress": 1.0, "total": 4.0, "message": "one"}))
	p.deliver(note("notifications/message", map[string]any{"progressToken": token, "progress": 9.0}))
	p.deliver(note("notifications/progress", map[string]any{"progressToken": "unknown", "progress": 9.0}))
	p.deliver(note("notifications/progress", map[string]any{"progressToken": token, "progress": 2.0}))
	remove()
	p.deliver(note("notifications/progress", map[string]any{"progressToken": token, "progress": 3.0}))

	assert.Equal(t, []mcp.ProgressNotificationParams{
		{ProgressToken: token, Progress: 1, Total: 4, Message: "one"},
		{ProgressToken: token, Progress: 2},
	}, got)
}
