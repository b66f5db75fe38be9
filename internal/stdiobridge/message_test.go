package stdiobridge

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseHeadTellsRequestsNotificationsAndResponsesApart(t *testing.T) {
	req, err := parseHead([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait_for"}}`))
	require.NoError(t, err)
	assert.True(t, req.isRequest())
	assert.Equal(t, "7", string(req.ID))
	assert.Empty(t, req.ProtocolVersion)

	note, err := parseHead([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`))
	require.NoError(t, err)
	assert.True(t, note.isNotification())

	nullID, err := parseHead([]byte(`{"jsonrpc":"2.0","id":null,"method":"notifications/initialized"}`))
	require.NoError(t, err)
	assert.True(t, nullID.isNotification(), "a null id is no id")

	resp, err := parseHead([]byte(`{"jsonrpc":"2.0","id":"s-1","result":{}}`))
	require.NoError(t, err)
	assert.False(t, resp.isRequest())
	assert.False(t, resp.isNotification())

	_, err = parseHead([]byte(`not json`))
	require.Error(t, err)
}

func TestParseHeadReadsTheMetaProtocolVersion(t *testing.T) {
	h, err := parseHead([]byte(`{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	require.NoError(t, err)
	assert.Equal(t, "2026-07-28", h.ProtocolVersion)

	h, err = parseHead([]byte(`{"jsonrpc":"2.0","id":"a","method":"tools/list","params":["not","an","object"]}`))
	require.NoError(t, err, "odd params are the server's business")
	assert.Empty(t, h.ProtocolVersion)
}

func TestInitializeResultFindsTheNegotiatedVersion(t *testing.T) {
	v, ok := initializeResult([]byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}`))
	assert.True(t, ok)
	assert.Equal(t, "2025-11-25", v)

	_, ok = initializeResult([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`))
	assert.False(t, ok)
	_, ok = initializeResult([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`))
	assert.False(t, ok)
}

func TestErrorResponseAnswersTheRequestID(t *testing.T) {
	var got struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(errorResponse(json.RawMessage(`"abc"`), codeInternalError, "daemon gone"), &got))
	assert.Equal(t, `"abc"`, string(got.ID))
	assert.Equal(t, codeInternalError, got.Error.Code)
	assert.Equal(t, "daemon gone", got.Error.Message)

	require.NoError(t, json.Unmarshal(errorResponse(nil, codeParseError, "x"), &got))
	assert.Equal(t, "null", string(got.ID))
}

func TestReadSSEYieldsEachEventsData(t *testing.T) {
	stream := ": keep-alive\n" +
		"event: message\nid: 1\ndata: {\"a\":1}\n\n" +
		"data: {\"b\":\r\n" + "data: 2}\r\n\r\n" +
		"retry: 100\n\n" + // no data: no event
		"data:{\"c\":3}" // unterminated at the end of the stream
	var got []string
	require.NoError(t, readSSE(strings.NewReader(stream), func(d []byte) { got = append(got, string(d)) }))
	assert.Equal(t, []string{`{"a":1}`, "{\"b\":\n2}", `{"c":3}`}, got)
}

func TestLineWriterWritesOneCompactLinePerMessage(t *testing.T) {
	var out bytes.Buffer
	w := &lineWriter{w: &out}
	require.NoError(t, w.write([]byte("{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1\n}\n")))
	require.NoError(t, w.write([]byte(`{"b":2}`)))
	require.Error(t, w.write([]byte(`{"unterminated`)))
	assert.Equal(t, "{\"jsonrpc\":\"2.0\",\"id\":1}\n{\"b\":2}\n", out.String())
}

func TestReplaceIDKeepsTheRest(t *testing.T) {
	out, err := replaceID([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":1}}`), `"re"`)
	require.NoError(t, err)
	h, err := parseHead(out)
	require.NoError(t, err)
	assert.Equal(t, `"re"`, string(h.ID))
	assert.Equal(t, "initialize", h.Method)
	assert.Contains(t, string(out), `"params":{"x":1}`)
}

// A 2026-07-28 request gets the headers streamable HTTP needs of it, which
// a stdio client does not send: Mcp-Method, and Mcp-Name for a tool's call
// and a task's request; an earlier version gets none.
func TestAModernRequestGetsItsStandardHeaders(t *testing.T) {
	parse := func(line string) head {
		t.Helper()
		h, err := parseHead([]byte(line))
		require.NoError(t, err)
		return h
	}
	call := parse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait_for","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	assert.Equal(t, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "wait_for"}, standardHeaders(call.ProtocolVersion, call))
	get := parse(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"wait_for/a@r"}}`)
	assert.Equal(t, map[string]string{"Mcp-Method": "tasks/get", "Mcp-Name": "wait_for/a@r"}, standardHeaders("2026-07-28", get))
	discover := parse(`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{}}`)
	assert.Equal(t, map[string]string{"Mcp-Method": "server/discover"}, standardHeaders("2026-07-28", discover))
	assert.Nil(t, standardHeaders("2025-11-25", call))
	assert.Nil(t, standardHeaders("", call))
}
