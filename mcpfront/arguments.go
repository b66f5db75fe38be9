package mcpfront

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// argumentsObject refuses, for every tool, arguments that are not a JSON
// object: the MCP schema says so, and a re-exposed tool would otherwise be
// called with none.
func argumentsObject(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		switch req.Params.Arguments.(type) {
		case nil, map[string]any:
			return next(ctx, req)
		}
		raw, _ := json.Marshal(req.Params.Arguments)
		return mcp.NewToolResultError(fmt.Sprintf("%s: arguments: must be a JSON object (got %s)", req.Params.Name, kindOf(raw))), nil
	}
}

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

// kindOf names the JSON kind of raw.
func kindOf(raw []byte) string {
	s := strings.TrimSpace(string(raw))
	switch {
	case s == "" || s == "null":
		return "null"
	case s[0] == '[':
		return "an array"
	case s[0] == '"':
		return "a string"
	case s[0] == '{':
		return "an object"
	case s == "true" || s == "false":
		return "a boolean"
	default:
		return "a number"
	}
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
