package worker

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/workflows"
)

// Local serves a front end that shares its process with the worker
// (durawait serve): it runs the very activity code a remote front end
// reaches through Temporal, directly, and forwards downstream progress.
type Local struct {
	Downstream *activities.Downstream
}

// Catalog is the worker's catalog, as the worker publishes it.
func (l Local) Catalog(ctx context.Context) (workflows.DownstreamCatalog, error) {
	return l.Downstream.Catalog(ctx)
}

// CallTool calls a re-exposed downstream tool; onProgress, when not nil,
// receives the server's progress notifications.
func (l Local) CallTool(ctx context.Context, in workflows.DownstreamCall, onProgress func(mcp.ProgressNotificationParams)) (workflows.DownstreamCallResult, error) {
	return l.Downstream.Call(ctx, in, onProgress)
}

// ListPanes lists the panes of a tmux server of this host.
func (l Local) ListPanes(ctx context.Context, in workflows.ListPanesInput) (workflows.ListPanesOutput, error) {
	return activities.ListPanes(ctx, in)
}
