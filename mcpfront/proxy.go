package mcpfront

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

// proxyTool is a downstream tool's definition under its exposed name.
func proxyTool(name string, def mcp.Tool) mcp.Tool {
	t := def
	t.Name = name
	if t.RawInputSchema == nil && t.InputSchema.Type == "" {
		t.InputSchema = mcp.ToolInputSchema{Type: "object"}
	}
	return t
}

func (f *Front) proxyHandler(ref toolRef) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if bad := oversizedArguments(req); bad != nil {
			return bad, nil
		}
		var onProgress func(mcp.ProgressNotificationParams)
		if token := progressToken(req); token != nil {
			onProgress = func(p mcp.ProgressNotificationParams) { f.forwardProgress(ctx, token, p) }
		}
		if f.opts.Workers == nil {
			return mcp.NewToolResultError("no durawait worker serves downstream MCP tools"), nil
		}
		if f.catalogUnreadable.Load() {
			// No worker answered the last catalog query: a call would wait
			// for one until its bound.
			return mcp.NewToolResultError(fmt.Sprintf("calling %s on downstream MCP server %q failed: no durawait worker answers on task queue %q right now; call again when one runs",
				ref.Def.Name, ref.Server, f.opts.TaskQueue)), nil
		}
		in := workflows.DownstreamCall{Server: ref.Server, Tool: ref.Def.Name}
		if req.Params.Arguments != nil {
			args, err := json.Marshal(req.Params.Arguments)
			if err != nil {
				return mcp.NewToolResultError(fmt.Sprintf("arguments: %v", err)), nil
			}
			in.Arguments = args
		}
		out, err := f.opts.Workers.CallTool(ctx, in, onProgress)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return mcp.NewToolResultError(fmt.Sprintf("calling %s on downstream MCP server %q failed: %s",
				ref.Def.Name, ref.Server, workflowErrorMessage(err))), nil
		}
		res, err := mcp.ParseCallToolResult(&out.Result)
		if err != nil {
			return mcp.NewToolResultError(fmt.Sprintf("calling %s on downstream MCP server %q: the worker's answer is not a tool result: %v",
				ref.Def.Name, ref.Server, err)), nil
		}
		return res, nil
	}
}

// forwardProgress relays a downstream server's progress notification to the
// caller, under the caller's own progress token.
func (f *Front) forwardProgress(ctx context.Context, token mcp.ProgressToken, p mcp.ProgressNotificationParams) {
	params := map[string]any{"progressToken": token, "progress": p.Progress}
	if p.Total != 0 {
		params["total"] = p.Total
	}
	if p.Message != "" {
		params["message"] = p.Message
	}
	if err := f.mcp.SendNotificationToClient(ctx, "notifications/progress", params); err != nil {
		f.opts.Logger.Debug("downstream progress notification not forwarded", "error", err)
		return
	}
	mcpwire.NoteNotificationSent(ctx)
}
