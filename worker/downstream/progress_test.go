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
// notifications for that call, over streamable HTTP and SSE.
func TestCallToolDeliversProgress(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	m := NewManager([]ServerConfig{
		{Name: "http", URL: httpServer(t)},
		{Name: "sse", URL: sseServer(t, false), Transport: TransportSSE},
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
		require.Len(t, got, 3, server)
		for i, p := range got {
			assert.Equal(t, float64(i+1), p.Progress, server)
			assert.Equal(t, float64(3), p.Total, server)
			assert.Contains(t, p.Message, "step", server)
		}
		mu.Unlock()
	}
}
