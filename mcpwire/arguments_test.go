package mcpwire

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// callWith runs ArgumentsGuard around a handler that answers "passed",
// with the arguments decoded from raw as a transport would.
func callWith(t *testing.T, raw string) *mcp.CallToolResult {
	t.Helper()
	var args any
	require.NoError(t, json.Unmarshal([]byte(raw), &args))
	req := mcp.CallToolRequest{}
	req.Params.Name = "some_tool"
	req.Params.Arguments = args
	res, err := ArgumentsGuard(func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("passed"), nil
	})(context.Background(), req)
	require.NoError(t, err)
	return res
}

func TestArgumentsDepthLimit(t *testing.T) {
	// arrays(n) nests n levels; inside the arguments object it is level n+1.
	arrays := func(n int) string { return strings.Repeat("[", n) + "1" + strings.Repeat("]", n) }
	objects := func(n int) string { return strings.Repeat(`{"k":`, n) + "1" + strings.Repeat("}", n) }

	cases := []struct {
		name, raw, refused string
	}{
		{"no arguments", `null`, ""},
		{"flat", `{"a":1,"b":"x"}`, ""},
		{"arrays at the limit", `{"a":` + arrays(MaxArgumentsDepth-1) + `}`, ""},
		{"objects at the limit", `{"a":` + objects(MaxArgumentsDepth-1) + `}`, ""},
		{"arrays one past", `{"a":` + arrays(MaxArgumentsDepth) + `}`, "some_tool: arguments[\"a\"]: nests more than 64 levels deep (durawait's limit for the arguments of any tool)"},
		{"objects one past", `{"a":` + objects(MaxArgumentsDepth) + `}`, "some_tool: arguments[\"a\"]: nests more than 64 levels deep"},
		{"a mix far past, the first member by name", `{"z":` + arrays(5000) + `,"b":[{"c":` + objects(100) + `}],"a":1}`, "some_tool: arguments[\"b\"]: nests more than 64 levels deep"},
		{"wide but shallow", `{"a":[` + strings.Repeat(`[1,{"x":[2]}],`, 10000) + `1]}`, ""},
		{"not an object", `[1]`, "some_tool: arguments: must be a JSON object (got an array)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := callWith(t, c.raw)
			text := res.Content[0].(mcp.TextContent).Text
			if c.refused == "" {
				assert.False(t, res.IsError, text)
				assert.Equal(t, "passed", text)
				return
			}
			assert.True(t, res.IsError)
			assert.Contains(t, text, c.refused)
		})
	}
}
