// Package mcpwire is durawait's MCP wire: everything that exists because of
// the protocol and of mcp-go rather than because of a tool. It carries the
// calls of two protocol eras (2025-11-25 and 2026-07-28) over streamable
// HTTP and stdio to the tools' mcp-go server: who may call (Origin, Host,
// authentication, sessions), the JSON-RPC envelope (batches, ids mcp-go
// would change, notifications mcp-go would refuse), the guards that must
// see a request as sent (UTF-8, the arguments' shape), and the routing of
// each request's progress and cancel to that request alone.
//
// It knows no tool, no workflow and no Temporal: the tools (package
// mcpfront) hand it their mcp-go server and the requests they answer
// themselves (Served). Upgrading mcp-go touches this package.
package mcpwire

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Served is what the wire carries requests to.
type Served struct {
	// MCP is the tools' mcp-go server: it answers every request the wire
	// and Own do not.
	MCP *server.MCPServer
	// Own answers the requests the tools serve themselves, ahead of mcp-go
	// (the task methods, task-augmented calls); handled false hands the
	// request on to MCP. Nil: none.
	Own func(ctx context.Context, req Request) (resp any, handled bool)
	// Logger reports what the wire could not write; nil is slog.Default.
	Logger *slog.Logger
}

func (s Served) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// own asks Own for its answer to msg, a request.
func (s Served) own(ctx context.Context, msg message, modern bool) (any, bool) {
	if s.Own == nil {
		return nil, false
	}
	return s.Own(ctx, Request{ID: msg.ID, Method: msg.method, Params: msg.Params, Modern: modern})
}

// Request is one JSON-RPC request as the wire routed it.
type Request struct {
	// ID is the request's id as the client sent it.
	ID json.RawMessage
	// Method is the request's method.
	Method string
	// Params are the request's params as sent (nil when it has none).
	Params json.RawMessage
	// Modern says the request is of protocol 2026-07-28 or later (its
	// header or its _meta says so).
	Modern bool
}

// Caller is who made a request, as far as the transport knows.
type Caller struct {
	// Session is the MCP session ID of a 2025-11-25 client over HTTP (""
	// otherwise).
	Session string
	// Principal is who the caller authenticated as; "" is the local user
	// (no authentication, or a stdio session).
	Principal string
	// LogLevel is the least severe level of the log messages the caller
	// asked for (LogEnabled); "": none.
	LogLevel mcp.LoggingLevel
}

type callerKey struct{}

// WithCaller records the caller of a request in ctx.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller the transport recorded in ctx (the zero
// Caller, the local user, when none is).
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// PrincipalFrom is the principal of the caller recorded in ctx.
func PrincipalFrom(ctx context.Context) string { return CallerFrom(ctx).Principal }

// perCallSuffix joins a session ID and the number of one of its requests:
// the HTTP transport runs each request of a 2025-11-25 session on a
// session of its own in mcp-go (see httpHandler).
const perCallSuffix = "~call-"

// SessionOf is the client's MCP session ID of a session ID mcp-go knows:
// the per-request suffix removed.
func SessionOf(id string) string {
	base, _, _ := strings.Cut(id, perCallSuffix)
	return base
}
