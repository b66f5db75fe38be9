package mcpfront

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

// Workers are what the front end knows of the workers: every side effect
// behind a tool (a re-exposed downstream call, listing tmux panes) runs
// there, and the workers publish the downstream catalog the tool list is
// built from.
type Workers interface {
	// Catalog is the workers' latest downstream catalog.
	Catalog(ctx context.Context) (workflows.DownstreamCatalog, error)
	// CallTool calls a re-exposed downstream tool. onProgress, when not
	// nil, may receive the server's progress notifications.
	CallTool(ctx context.Context, in workflows.DownstreamCall, onProgress func(mcp.ProgressNotificationParams)) (workflows.DownstreamCallResult, error)
	// ListPanes lists the panes of a tmux server on its host.
	ListPanes(ctx context.Context, in workflows.ListPanesInput) (workflows.ListPanesOutput, error)
}

// TemporalWorkers reaches the workers through Temporal only, for a front
// end with no worker in its process: the catalog is the answer of the task
// queue's catalog workflow, and each call runs as a short workflow whose
// activity runs on a worker. A caller's cancel cancels the workflow.
// Downstream progress notifications are not forwarded on this path.
type TemporalWorkers struct {
	// Client reaches Temporal.
	Client client.Client
	// TaskQueue the workers poll.
	TaskQueue string
}

// Catalog queries the catalog workflow of the task queue.
func (w TemporalWorkers) Catalog(ctx context.Context) (workflows.DownstreamCatalog, error) {
	id := workflows.CatalogWorkflowID(w.TaskQueue)
	v, err := w.Client.QueryWorkflow(ctx, id, "", workflows.CatalogQueryName)
	if err != nil {
		return workflows.DownstreamCatalog{}, fmt.Errorf("query the downstream catalog (workflow %s): %w", id, err)
	}
	var cat workflows.DownstreamCatalog
	if err := v.Get(&cat); err != nil {
		return workflows.DownstreamCatalog{}, fmt.Errorf("decode the downstream catalog (workflow %s): %w", id, err)
	}
	return cat, nil
}

// CallTool runs the call as a CallDownstreamTool workflow and waits for its
// answer. onProgress receives nothing: progress is not forwarded through
// Temporal.
func (w TemporalWorkers) CallTool(ctx context.Context, in workflows.DownstreamCall, _ func(mcp.ProgressNotificationParams)) (workflows.DownstreamCallResult, error) {
	var out workflows.DownstreamCallResult
	err := w.execute(ctx, workflows.DownstreamCallID, in.Server+"."+in.Tool, "call "+in.Server+"."+in.Tool,
		workflows.DownstreamCallWorkflowTimeout, workflows.CallDownstreamToolWorkflowName, in, &out)
	return out, err
}

// ListPanes runs the listing as a ListPanes workflow and waits for its
// answer.
func (w TemporalWorkers) ListPanes(ctx context.Context, in workflows.ListPanesInput) (workflows.ListPanesOutput, error) {
	var out workflows.ListPanesOutput
	err := w.execute(ctx, workflows.ListPanesID, workflows.ToolListPanes, "list_panes on task queue "+in.HostQueue,
		workflows.ListPanesWorkflowTimeout, workflows.ListPanesWorkflowName, in, &out)
	return out, err
}

// execute runs one short workflow of the caller's (its ID is newID of the
// caller's principal and a random nonce) and decodes its result into out. The
// workflow is cancelled when the caller cancels. Its DurawaitTool is tool.
func (w TemporalWorkers) execute(ctx context.Context, newID func(principal string, nonce [12]byte) string, tool, summary string, timeout time.Duration, workflow string, in, out any) error {
	principal := mcpwire.PrincipalFrom(ctx)
	run, err := w.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       newID(principal, nonce()),
		TaskQueue:                w.TaskQueue,
		WorkflowExecutionTimeout: timeout,
		StaticSummary:            workflows.TruncateUTF8(summary, workflows.MaxSummaryBytes),
		Memo:                     principalMemo(nil, principal),
		TypedSearchAttributes:    temporal.NewSearchAttributes(callerAttributes(ctx, workflows.KeywordValue(tool))...),
	}, workflow, in)
	if err != nil {
		return fmt.Errorf("start %s (Temporal engine unavailable?): %w", workflow, err)
	}
	err = getResult(ctx, run, out)
	if err != nil && ctx.Err() != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = w.Client.CancelWorkflow(cctx, run.GetID(), run.GetRunID())
		return ctx.Err()
	}
	return err
}

// nonce is a fresh random part of a workflow ID that no other call shares.
func nonce() [12]byte {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return b
}
