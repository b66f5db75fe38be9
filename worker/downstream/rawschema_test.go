package downstream

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decoded is JSON decoded into any, for comparing JSON by meaning.
func decoded(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v), "%s", raw)
	return v
}

// A tool's schemas are kept exactly as the server sent them: "$schema" and
// "title" stay, and no "required" is added.
func TestToolSchemasAreKeptAsSent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	m := NewManager([]ServerConfig{
		{Name: "http", URL: httpServer(t), Expose: true},
		{Name: "sse", URL: sseServer(t, false), Transport: TransportSSE, Expose: true},
	}, Options{}, testLogger())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	require.NoError(t, m.WaitReady(ctx))

	for _, server := range m.ServerNames() {
		tools, _, lastErr := m.ServerTools(server)
		require.NoError(t, lastErr, server)
		var raw *mcp.Tool
		for i := range tools {
			if tools[i].Name == "raw" {
				raw = &tools[i]
			}
		}
		require.NotNil(t, raw, "%s lists the raw tool", server)
		listed, err := json.Marshal(raw)
		require.NoError(t, err)
		var fields map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(listed, &fields))
		assert.Equal(t, decoded(t, []byte(rawInputSchema)), decoded(t, fields["inputSchema"]), server)
		assert.Equal(t, decoded(t, []byte(rawOutputSchema)), decoded(t, fields["outputSchema"]), server)
	}
}
