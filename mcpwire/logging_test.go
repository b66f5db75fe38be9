package mcpwire

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// levelEcho is a tool that answers the log level its caller asked for.
func levelEcho(s Served) {
	s.MCP.AddTool(mcp.NewTool("level"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("level=" + string(CallerFrom(ctx).LogLevel)), nil
	})
}

// logging/setLevel is kept per session on streamable HTTP (each request of
// a session runs on a session of its own in mcp-go, which would forget it),
// reaches the tools as the caller's LogLevel, and refuses a level that is
// not one of the eight; a 2026-07-28 request's level is its own _meta's.
func TestASessionsLogLevelReachesItsCalls(t *testing.T) {
	s, url := testHTTPServer(t)
	levelEcho(s)
	status, _, h := post(t, url, nil, initializeBody)
	require.Equal(t, http.StatusOK, status)
	session := map[string]string{"Mcp-Session-Id": h.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"level"}}`

	_, body, _ := post(t, url, session, call)
	assert.Contains(t, body, `"text":"level="`, "none asked for")
	_, body, _ = post(t, url, session, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"loud"}}`)
	assert.Contains(t, body, `"code":-32602`)
	assert.Contains(t, body, "level: must be one of debug, info, notice, warning, error, critical, alert, emergency")
	_, body, _ = post(t, url, session, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"warning"}}`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"result":{}}`, body)
	_, body, _ = post(t, url, session, call)
	assert.Contains(t, body, "level=warning")

	modern := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"level","_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/logLevel":"debug"}}}`
	_, body, _ = post(t, url, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "level"}, modern)
	assert.Contains(t, body, "level=debug")
}

// Over stdio the connection is the session.
func TestAStdioClientsLogLevelReachesItsCalls(t *testing.T) {
	s := testServed()
	levelEcho(s)
	in, feed := io.Pipe()
	out, results := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- ServeStdio(context.Background(), s, in, results) }()
	lines := bufio.NewScanner(out)
	send := func(msg string) map[string]any {
		t.Helper()
		_, err := io.WriteString(feed, msg+"\n")
		require.NoError(t, err)
		require.True(t, lines.Scan())
		var resp map[string]any
		require.NoError(t, json.Unmarshal(lines.Bytes(), &resp), lines.Text())
		return resp
	}
	send(initializeBody)
	assert.Equal(t, map[string]any{}, send(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`)["result"])
	resp := send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"level"}}`)
	assert.Contains(t, resp["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"], "level=info")
	require.NoError(t, feed.Close())
	require.NoError(t, <-served)
}

// LogEnabled lets through the levels at or above the caller's, and
// nothing for a caller that asked for none.
func TestLogEnabledFollowsTheCallersLevel(t *testing.T) {
	warning := WithCaller(context.Background(), Caller{LogLevel: mcp.LoggingLevelWarning})
	assert.True(t, LogEnabled(warning, mcp.LoggingLevelWarning))
	assert.True(t, LogEnabled(warning, mcp.LoggingLevelEmergency))
	assert.False(t, LogEnabled(warning, mcp.LoggingLevelInfo))
	assert.False(t, LogEnabled(context.Background(), mcp.LoggingLevelEmergency))
}
