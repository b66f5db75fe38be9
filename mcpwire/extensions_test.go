package mcpwire

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
)

// A request declares an extension in its own _meta client capabilities;
// anything else (none, another extension, a malformed _meta) declares
// nothing.
func TestARequestDeclaresAnExtensionInItsOwnMeta(t *testing.T) {
	for params, want := range map[string]bool{
		`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}`: true,
		`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/ui":{}}}}}`:    false,
		`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":[]}}}`:                                   false,
		`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`:                                                  false,
		`{"_meta":"x"}`: false,
		`{"capabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`: false,
		``: false,
	} {
		assert.Equal(t, want, Request{Params: json.RawMessage(params)}.Declares(TasksExtension), params)
	}
}

// A modern request over HTTP is checked as mcp-go checks the ones it
// answers (its version in the header and in _meta, alike; the standard
// headers), and a task method's Mcp-Name, when sent, must name its task.
func TestTaskRequestHeadersNameTheirTask(t *testing.T) {
	headers := func(kv ...string) http.Header {
		h := http.Header{}
		h.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	get := message{method: "tasks/get", ID: json.RawMessage(`1`), Params: json.RawMessage(`{"taskId":"wait_for/a@r",` + meta + `}`)}
	assert.Nil(t, headerMismatch(headers(mcp.HeaderMethod, "tasks/get", mcp.HeaderName, "wait_for/a@r"), get))
	assert.Nil(t, headerMismatch(headers(mcp.HeaderMethod, "tasks/get"), get), "Mcp-Name is not required for correctness")
	for _, h := range []http.Header{
		headers(mcp.HeaderMethod, "tasks/get", mcp.HeaderName, "wait_for/b@r"),
		headers(mcp.HeaderName, "wait_for/a@r"),
		headers(mcp.HeaderMethod, "tasks/cancel", mcp.HeaderName, "wait_for/a@r"),
		headers(mcp.HeaderMethod, "tasks/get", mcp.HeaderLastEventID, "7"),
		{mcp.HeaderMethod: []string{"tasks/get"}},
	} {
		refusal := headerMismatch(h, get)
		if assert.NotNil(t, refusal, h) {
			assert.Equal(t, mcp.HEADER_MISMATCH, refusal.Error.Code, h)
			assert.Equal(t, http.StatusBadRequest, modernStatus(*refusal))
		}
	}
	call := message{method: "tools/call", ID: json.RawMessage(`2`), Params: json.RawMessage(`{"name":"wait_for",` + meta + `}`)}
	assert.NotNil(t, headerMismatch(headers(mcp.HeaderMethod, "tools/call", mcp.HeaderName, "wait_agent"), call))
	assert.Nil(t, headerMismatch(headers(mcp.HeaderMethod, "tools/call", mcp.HeaderName, "wait_for"), call))
	noMeta := message{method: "tools/call", ID: json.RawMessage(`3`), Params: json.RawMessage(`{"name":"wait_for"}`)}
	refusal := headerMismatch(headers(mcp.HeaderMethod, "tools/call", mcp.HeaderName, "wait_for"), noMeta)
	if assert.NotNil(t, refusal) {
		assert.Equal(t, mcp.INVALID_PARAMS, refusal.Error.Code)
	}
	assert.Equal(t, http.StatusNotFound, modernStatus(ErrorResponse(nil, mcp.METHOD_NOT_FOUND, "x")))
	assert.Equal(t, http.StatusOK, modernStatus(ResultResponse(nil, struct{}{})))
	assert.Equal(t, http.StatusOK, modernStatus(ErrorResponse(nil, mcp.INTERNAL_ERROR, "x")))
}
