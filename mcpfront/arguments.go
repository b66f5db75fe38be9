package mcpfront

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// MaxArgumentsDepth bounds how deeply any tool's arguments nest, the
// arguments object itself being level 1. Every parser, schema check and
// encoder after it recurses once per level; no real argument comes near
// (a Kubernetes object nests about 15 deep).
const MaxArgumentsDepth = 64

// maxMemberNameShown bounds how much of a member's name a refusal repeats.
const maxMemberNameShown = 64

// argumentsObject refuses, for every tool, what argumentsRefusal refuses,
// before anything else reads the arguments.
func argumentsObject(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if refusal := argumentsRefusal(req); refusal != "" {
			return mcp.NewToolResultError(refusal), nil
		}
		return next(ctx, req)
	}
}

// argumentsRefusal says why a call's arguments are refused whatever its
// tool, or "" when they are not: arguments that are not a JSON object (the
// MCP schema says so, and a re-exposed tool would otherwise be called with
// none), and arguments nested deeper than MaxArgumentsDepth. Every path of
// a tools/call asks it first: the tool handlers' middleware and a task's
// creation.
func argumentsRefusal(req mcp.CallToolRequest) string {
	switch args := req.Params.Arguments.(type) {
	case nil:
		return ""
	case map[string]any:
		if member, deep := tooDeep(args); deep {
			if len(member) > maxMemberNameShown {
				member = member[:maxMemberNameShown] + "..."
			}
			return fmt.Sprintf("%s: arguments[%q]: nests more than %d levels deep (durawait's limit for the arguments of any tool)",
				req.Params.Name, member, MaxArgumentsDepth)
		}
		return ""
	}
	raw, _ := json.Marshal(req.Params.Arguments)
	return fmt.Sprintf("%s: arguments: must be a JSON object (got %s)", req.Params.Name, kindOf(raw))
}

// tooDeep reports whether args nest deeper than MaxArgumentsDepth, and the
// first member (in name order) that does.
func tooDeep(args map[string]any) (member string, deep bool) {
	names := make([]string, 0, len(args))
	for name := range args {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if depthOver(args[name], MaxArgumentsDepth-1) {
			return name, true
		}
	}
	return "", false
}

// depthOver reports whether v nests more than budget levels (an object or
// array is one level, a scalar none). It walks no deeper than budget + 1,
// on the heap, so a hostile depth costs neither time nor stack.
func depthOver(v any, budget int) bool {
	type node struct {
		v     any
		level int
	}
	stack := []node{{v, 1}}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		var children []any
		switch c := n.v.(type) {
		case map[string]any:
			children = slices.Collect(maps.Values(c))
		case []any:
			children = c
		default:
			continue // a scalar: no level of its own
		}
		if n.level > budget {
			return true
		}
		for _, child := range children {
			stack = append(stack, node{child, n.level + 1})
		}
	}
	return false
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
