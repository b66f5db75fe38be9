package main

import (
	"context"
	"os"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// registerEnvTool adds the env tool: the server's own environment, one
// NAME=value per line, sorted. Tests use it to see what a stdio server
// inherits from durawait.
func registerEnvTool(s *server.MCPServer) {
	s.AddTool(mcp.NewTool("env", mcp.WithDescription("This server's environment, NAME=value per line, sorted."), readOnly("Environment")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			vars := os.Environ()
			sort.Strings(vars)
			return mcp.NewToolResultText(strings.Join(vars, "\n")), nil
		})
}
