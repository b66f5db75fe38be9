package mcpwire

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Which ids mcp-go would change: integers past 2^53, long fractions; not
// strings, small integers or short fractions.
func TestLossyID(t *testing.T) {
	for id, lossy := range map[string]bool{
		`1`: false, `-7`: false, `9007199254740992`: false, `"9007199254740993"`: false, `0.5`: false,
		`9007199254740993`: true, `12345678901234567890`: true, `-9223372036854775809`: true,
		`0.1000000000000000055511151231257827`: true, `1e2`: true,
		`null`: false, `1e400`: true, `"x"`: false,
	} {
		assert.Equal(t, lossy, lossyID(json.RawMessage(id)), id)
	}
}

// A request whose id is a huge integer gets its answer with the same id,
// digit for digit, over HTTP (JSON and SSE answers alike) and stdio; a
// stand-in never shows.
func TestAHugeIntegerIDComesBackUnchanged(t *testing.T) {
	const huge = `123456789012345678901234567890`
	_, url := testHTTPServer(t)
	status, body, header := post(t, url, nil, `{"jsonrpc":"2.0","id":`+huge+`,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `"id":`+huge+`,`)
	assert.NotContains(t, body, "durawait-id-")
	session := map[string]string{"Mcp-Session-Id": header.Get("Mcp-Session-Id")}
	status, body, _ = post(t, url, session, `{"jsonrpc":"2.0","id":`+huge+`,"method":"tools/list"}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `"id":`+huge+`,`)
	assert.NotContains(t, body, "durawait-id-")

	var out bytes.Buffer
	require.NoError(t, ServeStdio(context.Background(), testServed(), strings.NewReader(`{"jsonrpc":"2.0","id":`+huge+`,"method":"ping"}`+"\n"), &out))
	assert.Contains(t, out.String(), `"id":`+huge+`,`)
	assert.NotContains(t, out.String(), "durawait-id-")
}

// Over stdio a huge integer id's request is cancelled by that id too.
func TestAHugeIntegerIDIsCancelledOverStdio(t *testing.T) {
	const huge = `123456789012345678901234567890`
	f := testServed()
	started, ended := make(chan struct{}), make(chan struct{})
	f.MCP.AddTool(mcp.NewTool("block"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(started)
		<-ctx.Done()
		close(ended)
		return nil, ctx.Err()
	})
	in, feed := io.Pipe()
	var out bytes.Buffer
	served := make(chan error, 1)
	go func() { served <- ServeStdio(context.Background(), f, in, &out) }()
	_, err := io.WriteString(feed, initializeBody+"\n"+`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":`+huge+`,"method":"tools/call","params":{"name":"block"}}`+"\n")
	require.NoError(t, err)
	<-started
	_, err = io.WriteString(feed, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+huge+`}}`+"\n")
	require.NoError(t, err)
	select {
	case <-ended: // the handler's context ended: the cancel reached it
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled request's handler is still running")
	}
	require.NoError(t, feed.Close())
	require.NoError(t, <-served)
}
