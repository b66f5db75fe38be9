package mcpfront

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/durawait/durawait/mcpwire"
)

// MCP logging: what a person watching a long call would want to see, sent
// to the caller as notifications/message on the call's own stream, when it
// asked for messages at that level (logging/setLevel on its 2025-11-25
// session, or its 2026-07-28 request's _meta logLevel; logging is
// deprecated from 2026-07-28, SEP-2577). One message per state change,
// never one per sample: a wait started or re-attached to (info), a probe
// that cannot be reached (warning, once per distinct error), an agent
// blocker (warning). durawait's own log lines go to its log, not here.

// loggerName names durawait in the messages it sends.
const loggerName = "durawait"

// tellCaller sends the caller of ctx a log message at level with data
// (message, and what it is about), if it asked for that level.
func (f *Front) tellCaller(ctx context.Context, level mcp.LoggingLevel, data map[string]any) {
	if !mcpwire.LogEnabled(ctx, level) {
		return
	}
	params := map[string]any{"level": level, "logger": loggerName, "data": data}
	if err := f.mcp.SendNotificationToClient(ctx, "notifications/message", params); err != nil {
		f.opts.Logger.Debug("log message to the caller not sent", "error", err)
		return
	}
	mcpwire.NoteNotificationSent(ctx)
}
