package mcpfront

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// rawArgs is a call's arguments as JSON for the argument parsers of
// workflows: {} when there are none.
func rawArgs(req mcp.CallToolRequest) json.RawMessage {
	if req.Params.Arguments == nil {
		return json.RawMessage(`{}`)
	}
	b, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}

// noArguments refuses any argument of a tool that takes none, naming each.
func noArguments(req mcp.CallToolRequest) *mcp.CallToolResult {
	args, _ := req.Params.Arguments.(map[string]any)
	if len(args) == 0 {
		return nil
	}
	names := make([]string, 0, len(args))
	for name := range args {
		names = append(names, name)
	}
	sort.Strings(names)
	msgs := make([]string, len(names))
	for i, name := range names {
		msgs[i] = fmt.Sprintf("%q: unknown field (this tool takes no arguments)", name)
	}
	return mcp.NewToolResultError(req.Params.Name + ": invalid arguments: " + strings.Join(msgs, "; "))
}

// MaxForwardedArgumentsBytes bounds the arguments of a call of a
// re-exposed downstream tool (JSON as re-encoded), so that no caller makes
// durawait hold and forward megabytes to a downstream server.
const MaxForwardedArgumentsBytes = 1 << 20

// oversizedArguments refuses a re-exposed call whose arguments are over
// MaxForwardedArgumentsBytes, naming the members over it (or all of them).
func oversizedArguments(req mcp.CallToolRequest) *mcp.CallToolResult {
	raw, err := json.Marshal(req.Params.Arguments)
	if err != nil || len(raw) <= MaxForwardedArgumentsBytes {
		return nil
	}
	var big []string
	if args, ok := req.Params.Arguments.(map[string]any); ok {
		for name, v := range args {
			if b, err := json.Marshal(v); err == nil && len(b) > MaxForwardedArgumentsBytes {
				big = append(big, fmt.Sprintf("arguments.%s: must be at most %d bytes of JSON (got %d)", name, MaxForwardedArgumentsBytes, len(b)))
			}
		}
	}
	sort.Strings(big)
	if len(big) == 0 {
		big = []string{fmt.Sprintf("arguments: must be at most %d bytes of JSON in all (got %d)", MaxForwardedArgumentsBytes, len(raw))}
	}
	return mcp.NewToolResultError(req.Params.Name + ": " + strings.Join(big, "; "))
}
