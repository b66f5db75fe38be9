package mcpfront

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A re-exposed tool is listed with exactly the schemas its server sent.
func TestReexposedToolKeepsItsSchemas(t *testing.T) {
	const (
		input  = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"number","default":3}}}`
		output = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"sum":{"type":"number"}},"additionalProperties":false}`
	)
	def := mcp.NewToolWithRawSchema("sum", "Adds.", []byte(input))
	def.RawOutputSchema = []byte(output)
	f := New(Options{Workers: fakeDownstream{
		order:  []string{"calc"},
		expose: map[string]bool{"calc": true},
		defs:   map[string][]mcp.Tool{"calc": {def}},
	}})

	resp := f.mcp.HandleMessage(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	res, ok := resp.(mcp.JSONRPCResponse)
	require.True(t, ok, "%#v", resp)
	wire, err := json.Marshal(res.Result)
	require.NoError(t, err)
	var list struct {
		Tools []struct {
			Name         string `json:"name"`
			InputSchema  any    `json:"inputSchema"`
			OutputSchema any    `json:"outputSchema"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(wire, &list))
	var want struct{ in, out any }
	require.NoError(t, json.Unmarshal([]byte(input), &want.in))
	require.NoError(t, json.Unmarshal([]byte(output), &want.out))
	found := false
	for _, tool := range list.Tools {
		if tool.Name == "sum" {
			found = true
			assert.Equal(t, want.in, tool.InputSchema)
			assert.Equal(t, want.out, tool.OutputSchema)
		}
	}
	assert.True(t, found, "sum is re-exposed: %s", wire)
}

// A downstream tool without an input schema is re-exposed with the smallest
// valid one.
func TestProxyToolWithoutSchemaGetsAnObject(t *testing.T) {
	b, err := json.Marshal(proxyTool("bare", mcp.Tool{Name: "x"}))
	require.NoError(t, err)
	var fields map[string]any
	require.NoError(t, json.Unmarshal(b, &fields))
	assert.Equal(t, "bare", fields["name"])
	assert.Equal(t, "object", fields["inputSchema"].(map[string]any)["type"])
}
