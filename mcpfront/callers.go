package mcpfront

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

// clientNames remembers, by MCP session ID, the name/version of the client
// that initialized it (for DurawaitClient).
type clientNames struct{ m sync.Map }

// hooks records each session's client at initialize.
func (c *clientNames) hooks() *server.Hooks {
	h := &server.Hooks{}
	h.AddAfterInitialize(func(ctx context.Context, _ any, req *mcp.InitializeRequest, _ *mcp.InitializeResult) {
		if s := server.ClientSessionFromContext(ctx); s != nil && req != nil {
			if name := clientName(req.Params.ClientInfo); name != "" {
				c.m.Store(s.SessionID(), name)
			}
		}
	})
	h.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) { c.m.Delete(s.SessionID()) })
	return h
}

// clientName is "name/version" of a client ("" when it sent no name).
func clientName(info mcp.Implementation) string {
	if info.Name == "" {
		return ""
	}
	if info.Version == "" {
		return info.Name
	}
	return info.Name + "/" + info.Version
}

// sessionOf is the caller's MCP session ID as its transport gave it (the
// client's, not one request's), or "": on stdio, which has no session ID,
// and on protocol 2026-07-28. It is the one value of the DurawaitSession
// attribute, the log lines' caller.session and the events' session.
func sessionOf(ctx context.Context) string {
	return mcpwire.SessionOf(mcpwire.CallerFrom(ctx).Session)
}

// callerAttributes are the tool, the caller and the session of a call.
func callerAttributes(ctx context.Context, tool string) []temporal.SearchAttributeUpdate {
	updates := []temporal.SearchAttributeUpdate{
		workflows.KeyTool.ValueSet(tool),
		workflows.KeyCaller.ValueSet(workflows.KeywordValue(workflows.CallerValue(mcpwire.PrincipalFrom(ctx)))),
	}
	if sid := sessionOf(ctx); sid != "" {
		updates = append(updates, workflows.KeySession.ValueSet(workflows.KeywordValue(sid)))
	}
	return updates
}
