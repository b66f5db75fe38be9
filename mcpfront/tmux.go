package mcpfront

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

var (
	//go:embed schemas/wait_for_text.input.json
	waitForTextInputSchema []byte
	//go:embed schemas/wait_for_text.output.json
	waitForTextOutputSchema []byte
	//go:embed schemas/list_panes.input.json
	listPanesInputSchema []byte
	//go:embed schemas/list_panes.output.json
	listPanesOutputSchema []byte
)

// textError is the second result variant, as an isError result.
func textError(e workflows.TextWaitError) *mcp.CallToolResult {
	res := structuredResult(map[string]any{"error": e})
	res.IsError = true
	return res
}

func (f *Front) handleListPanes(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if bad := noArguments(req); bad != nil {
		return bad, nil
	}
	queue, bad := f.tmuxHostQueue()
	if bad != nil {
		return textError(*bad), nil
	}
	out, err := f.opts.Workers.ListPanes(ctx, workflows.ListPanesInput{HostQueue: queue, Socket: f.opts.Tmux.Socket})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return textError(workflows.TextWaitError{Code: workflows.TextErrTmuxUnavailable, Effects: "none", Retryable: true,
			Message: "could not list the panes: " + workflowErrorMessage(err)}), nil
	}
	if out.Error != nil {
		return textError(*out.Error), nil
	}
	panes := out.Panes
	if panes == nil {
		panes = []workflows.Pane{}
	}
	return structuredResult(map[string]any{"panes": panes}), nil
}

// tmuxHostQueue is the task queue of the workers' tmux host, as the
// catalog publishes it, or the error to answer when no worker runs tmux.
func (f *Front) tmuxHostQueue() (string, *workflows.TextWaitError) {
	if f.opts.Workers != nil {
		if queue := f.catalog().source.TmuxHostQueue; queue != "" {
			return queue, nil
		}
	}
	return "", &workflows.TextWaitError{Code: workflows.TextErrTmuxUnavailable, Effects: "none", Retryable: true,
		Message: "no durawait worker serves the tmux tools (none has published a tmux host queue on task queue " + f.opts.TaskQueue + ")"}
}

func (f *Front) handleWaitForText(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	w, bad := f.prepareWaitForText(ctx, req)
	if bad != nil {
		return bad, nil
	}
	// Counted as attached before attaching, so that another caller's
	// hang-up meanwhile does not cancel the wait under this one.
	release := f.attached.hold(w.id)
	defer release()
	// The start/attach/settle dance is described at sharedWait.
	run, events, unsubscribe, err := f.startOrAttach(ctx, w)
	if err != nil {
		return textError(workflows.TextWaitError{Code: workflows.TextErrTmuxUnavailable, Effects: "none", Retryable: true,
			Message: startFailure(err)}), nil
	}
	defer unsubscribe()
	id, bound := w.id, w.bound
	// w is not used past here: its start's memo and attributes are not held
	// through the wait.
	token := progressToken(req)
	var out workflows.TextWaitOutcome
	err = f.awaitOutcome(ctx, run, events, bound, &out, func(ev workflows.WaitEvent) bool {
		switch e := ev.(type) {
		case workflows.TextWaitOutcome:
			out = e
			return true
		case workflows.BaselineRead:
			f.reportProgress(ctx, token, 1, 0, fmt.Sprintf("baseline of pane %s read (%d bytes); following its output", e.PaneID, e.Bytes))
		}
		return false
	})
	if err != nil && ctx.Err() != nil {
		// The caller cancelled: detach the control client now, unless
		// another caller (of the same principal: the ID holds it) is
		// attached to this wait here, or a task holds it. A shutdown is
		// no hang-up: the wait runs on for the call that comes again.
		if release() && !draining(ctx) {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = f.opts.Temporal.CancelWorkflow(cctx, id, run.GetRunID())
			f.opts.Logger.Debug("wait_for_text: the caller hung up; the wait is cancelled", "workflow_id", id)
		} else {
			f.opts.Logger.Debug("wait_for_text: the caller hung up; the wait runs on for the other callers attached", "workflow_id", id)
		}
		return nil, ctx.Err()
	}
	if isCanceled(err) {
		return f.cancelledText(ctx, run.GetID(), run.GetRunID()), nil
	}
	return textAnswer(out, err), nil
}

// prepareWaitForText parses a wait_for_text call into the wait it starts
// or attaches to (the caller's own: the principal is part of its ID); a
// non-nil result is the call's answer (bad arguments).
func (f *Front) prepareWaitForText(ctx context.Context, req mcp.CallToolRequest) (sharedWait, *mcp.CallToolResult) {
	spec, err := workflows.ParseWaitForText(rawArgs(req))
	if err != nil {
		return sharedWait{}, textError(workflows.TextWaitError{Code: workflows.TextErrInvalidArguments, Message: err.Error(), Effects: "none"})
	}
	noteAttributes(ctx, attrPane.String(spec.Target.PaneID))
	target := workflows.TextWaitTarget(spec)
	noteTarget(ctx, target)
	queue, bad := f.tmuxHostQueue()
	if bad != nil {
		return sharedWait{}, textError(*bad)
	}
	principal := mcpwire.PrincipalFrom(ctx)
	maxWaitSec := int(f.opts.Tmux.MaxWait / time.Second)
	return sharedWait{
		id:      spec.WorkflowID(f.opts.Tmux.Socket, principal),
		memo:    principalMemo(workflows.TextWaitMemo(spec, maxWaitSec), principal),
		summary: workflows.TextWaitSummary(spec, maxWaitSec),
		details: workflows.TextWaitDetails(spec, maxWaitSec),
		attrs: f.startAttributes(ctx, &req, workflows.ToolWaitForText, append(f.hostAttribute(), workflows.StartedRunning(),
			workflows.KeyTarget.ValueSet(target))...),
		workflow: workflows.WaitForTextWorkflowName,
		// With a worker in this process, the catalog (and so the tmux
		// queue) is that worker's: it watches the pane, with no claim.
		input: workflows.WaitForTextInput{
			Spec: spec, HostQueue: queue, Host: f.opts.Host, Socket: f.opts.Tmux.Socket, MaxWait: f.opts.Tmux.MaxWait,
		},
		pollMs: 1000,
		bound:  f.opts.Tmux.MaxWait,
	}, nil
}

// textAnswer is wait_for_text's answer for a closed wait.
func textAnswer(out workflows.TextWaitOutcome, err error) *mcp.CallToolResult {
	if err != nil {
		return textError(workflows.TextWaitError{Code: workflows.TextErrTmuxUnavailable, Effects: "none", Retryable: true,
			Message: "the wait ended without a result: " + workflowErrorMessage(err)})
	}
	if out.Error != nil {
		return textError(*out.Error)
	}
	return structuredResult(out.Result)
}
