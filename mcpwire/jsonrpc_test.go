package mcpwire

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestModernCallsDropTheLegacyTaskParam(t *testing.T) {
	out, ok := withoutTaskParam([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait_for","arguments":{"a":1},"task":{"ttl":5}}}`))
	require.True(t, ok)
	var got map[string]any
	require.NoError(t, json.Unmarshal(out, &got))
	assert.Equal(t, map[string]any{"name": "wait_for", "arguments": map[string]any{"a": float64(1)}}, got["params"])
	_, ok = withoutTaskParam([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait_for"}}`))
	assert.False(t, ok, "nothing to drop")

	call := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait_for","task":{}}}`)
	msg, _ := parseMessage(call)
	_, changed := forMCPGo(msg, call, false)
	assert.False(t, changed, "a 2025-11-25 task call is durawait's own (handleOwn), never rewritten")
	plain, changed := forMCPGo(msg, call, true)
	assert.True(t, changed)
	assert.NotContains(t, string(plain), `"task"`)
	list := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"task":{}}}`)
	msg, _ = parseMessage(list)
	_, changed = forMCPGo(msg, list, true)
	assert.False(t, changed, "only tools/call")
}
