package mcpwire

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

// ArgumentsGuard is the tool handler middleware that refuses, for every
// tool, what ArgumentsRefusal refuses, before anything else reads the
// arguments.
func ArgumentsGuard(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if refusal := ArgumentsRefusal(req); refusal != "" {
			return mcp.NewToolResultError(refusal), nil
		}
		return next(ctx, req)
	}
}

// ArgumentsRefusal says why a call's arguments are refused whatever its
// tool, or "" when they are not: arguments that are not a JSON object (the
// MCP schema says so, and a re-exposed tool would otherwise be called with
// none), and arguments nested deeper than MaxArgumentsDepth. Every path of
// a tools/call asks it first: the tool handlers' middleware and a task's
// creation.
func ArgumentsRefusal(req mcp.CallToolRequest) string {
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
