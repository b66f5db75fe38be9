package mcpfront

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/workflows"
)

var (
	//go:embed schemas/wait_for.input.json
	waitForInputSchema []byte
	//go:embed schemas/wait_for.output.json
	waitForOutputSchema []byte
)

const waitForDescription = `Poll a downstream MCP tool (the probe) until its output matches a regex (until.matches), stops matching (until.not_matches), or stays unchanged for quiet_for_sec; stop early with reason "failed" when until.fail_matches matches.
The first sample is taken at once, then one every poll_sec (default 2); max_wait_sec (default 120) is clamped to 300. A timeout is a normal result that still returns last_observation: call again if you need longer.
Prefer matches / not_matches: quiescence proves idleness, not completion.
The wait is durable: if this call is cut off, call again with the same arguments and you attach to the same wait (samples and elapsed_sec count from the first call).`

func waitForTool() mcp.Tool {
	return tool("wait_for", "Wait for a probe's condition", waitForDescription,
		waitForInputSchema, waitForOutputSchema, true, false, true, true)
}

func (f *Front) handleWaitFor(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	raw, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("wait_for: arguments: %v", err)), nil
	}
	if req.Params.Arguments == nil {
		raw = []byte(`{}`)
	}
	spec, err := workflows.ParseWaitFor(raw, f.catalog())
	if err != nil {
		return mcp.NewToolResultError("wait_for: " + err.Error()), nil
	}
	id := spec.WorkflowID("")

	events, unsubscribe := f.subscribe(id)
	defer unsubscribe()
	f.waitSettled(ctx, id)

	run, err := f.opts.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                f.opts.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		StaticSummary:            waitSummary(spec),
		Memo: map[string]any{
			"probe_tool": spec.Probe.Tool,
			"probe_args": string(spec.Probe.Args),
			"until":      spec.Until,
		},
	}, workflows.WaitForWorkflowName, workflows.WaitForInput{Spec: spec, HeartbeatTimeout: f.opts.HeartbeatTimeout})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return mcp.NewToolResultError(fmt.Sprintf("wait_for: could not start the wait (Temporal engine unavailable?): %v", err)), nil
	}

	token := progressToken(req)
	var result workflows.WaitForResult
	err = f.awaitOutcome(ctx, run, events, &result, func(ev any) bool {
		switch e := ev.(type) {
		case workflows.Sample:
			if token != nil {
				f.sendProgress(ctx, token, e)
			}
		case workflows.WaitForResult:
			result = e
			return true
		}
		return false
	})
	if err != nil {
		if ctx.Err() != nil {
			// The caller went away; the wait runs on to its own bound.
			return nil, ctx.Err()
		}
		return mcp.NewToolResultError("wait_for: " + workflowErrorMessage(err)), nil
	}
	return structuredResult(result), nil
}

// subscribe follows a workflow's in-process events, when there is a feed.
func (f *Front) subscribe(workflowID string) (<-chan any, func()) {
	if f.opts.Events == nil {
		return nil, func() {}
	}
	return f.opts.Events.Subscribe(workflowID)
}

// awaitOutcome waits for a workflow's result: from Temporal, or earlier from
// the in-process feed when handle says an event is the outcome (the
// workflow records that same outcome durably). handle sees every event in
// order; result receives Temporal's answer when that comes first.
func (f *Front) awaitOutcome(ctx context.Context, run client.WorkflowRun, events <-chan any, result any, handle func(any) bool) error {
	getCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan error, 1)
	go func() { got <- run.Get(getCtx, result) }()
	for {
		select {
		case ev, open := <-events:
			if !open {
				events = nil
				continue
			}
			if handle(ev) {
				f.settle(run)
				return nil
			}
		case err := <-got:
			return err
		}
	}
}

// settleTimeout bounds how long a closing run is waited for.
const settleTimeout = 10 * time.Second

// settle remembers a run whose outcome was returned before Temporal closed
// it, until it closes.
func (f *Front) settle(run client.WorkflowRun) {
	id, runID := run.GetID(), run.GetRunID()
	f.settling.Store(id, runID)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		defer cancel()
		_ = f.opts.Temporal.GetWorkflow(ctx, id, runID).Get(ctx, nil)
		f.settling.CompareAndDelete(id, runID)
	}()
}

// waitSettled lets a run whose outcome was already returned close first, so
// that an identical call made right after it starts a new wait instead of
// attaching to the finished one.
func (f *Front) waitSettled(ctx context.Context, id string) {
	v, ok := f.settling.Load(id)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	_ = f.opts.Temporal.GetWorkflow(ctx, id, v.(string)).Get(ctx, nil)
}

// workflowErrorMessage digs the application error's own message out of the
// wrappers Temporal puts around it.
func workflowErrorMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}

func waitSummary(spec workflows.WaitForSpec) string {
	cond := string(spec.Until.Kind)
	switch spec.Until.Kind {
	case workflows.ConditionQuietForSec:
		cond = fmt.Sprintf("quiet for %ds", spec.Until.QuietForSec)
	default:
		cond = fmt.Sprintf("%s /%s/", spec.Until.Kind, spec.Until.Pattern)
	}
	if spec.Until.FailPattern != "" {
		cond += fmt.Sprintf(", fail on /%s/", spec.Until.FailPattern)
	}
	return fmt.Sprintf("wait_for %s until %s (every %ds, at most %ds)", spec.Probe.Tool, cond, spec.PollSec, spec.MaxWaitSec)
}

func progressToken(req mcp.CallToolRequest) mcp.ProgressToken {
	if req.Params.Meta == nil {
		return nil
	}
	return req.Params.Meta.ProgressToken
}

// sendProgress sends one notifications/progress for a sample.
func (f *Front) sendProgress(ctx context.Context, token mcp.ProgressToken, s workflows.Sample) {
	err := f.mcp.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
		"progressToken": token,
		"progress":      s.Number,
		"total":         s.Expected,
		"message":       fmt.Sprintf("sample %d: %s", s.Number, shorten(s.Observation, 120)),
	})
	if err != nil {
		f.opts.Logger.Debug("progress notification not sent", "error", err)
	}
}

// shorten returns the first n runes of s's first line, with an ellipsis when cut.
func shorten(s string, n int) string {
	line, _, cut := strings.Cut(strings.TrimSpace(s), "\n")
	if utf8.RuneCountInString(line) > n {
		line = string([]rune(line)[:n])
		cut = true
	}
	if cut {
		line += "…"
	}
	return line
}
