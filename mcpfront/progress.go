package mcpfront

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/durawait/durawait/mcpwire"
)

// progressToken is the progress token the caller sent with its call, or
// nil: no progress notifications are wanted.
func progressToken(req mcp.CallToolRequest) mcp.ProgressToken {
	if req.Params.Meta == nil {
		return nil
	}
	return req.Params.Meta.ProgressToken
}

// reportProgress reports one sample or state change of a call's wait: as a
// tool-call event, and as a progress notification when the caller sent a
// progress token (nil: none).
func (f *Front) reportProgress(ctx context.Context, token mcp.ProgressToken, progress, total float64, message string) {
	noteProgress(ctx, progress, total, message)
	if token != nil {
		f.sendProgress(ctx, token, progress, total, message)
	}
}

// sendProgress sends one notifications/progress for the caller's token on
// the caller's own stream; total 0 is left out.
func (f *Front) sendProgress(ctx context.Context, token mcp.ProgressToken, progress, total float64, message string) {
	params := map[string]any{"progressToken": token, "progress": progress, "message": message}
	if total > 0 {
		params["total"] = total
	}
	if err := f.mcp.SendNotificationToClient(ctx, "notifications/progress", params); err != nil {
		f.opts.Logger.Debug("progress notification not sent", "error", err)
		return
	}
	mcpwire.NoteNotificationSent(ctx)
}
