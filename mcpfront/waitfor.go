package mcpfront

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/mcpwire"
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
wake_on_event names an event (see post_event): each post of it samples the probe at once, e.g. a CI webhook wakes a kubectl wait.
The wait is durable: if this call is cut off, call again with the same arguments and you attach to the same wait (samples and elapsed_sec count from the first call).`

func (f *Front) handleWaitFor(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	w, bad := f.prepareWaitFor(ctx, req)
	if bad != nil {
		return bad, nil
	}
	// The start/attach/settle dance is described at sharedWait.
	run, events, unsubscribe, err := f.startOrAttach(ctx, w)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return startFailed(workflows.ToolWaitFor, err), nil
	}
	defer unsubscribe()
	bound, maxWaitSec := w.bound, w.maxWaitSec
	// w is not used past here: its start's memo and attributes are not held
	// through the wait.

	token := progressToken(req)
	var result workflows.WaitForResult
	var trouble string // the probe's last unavailability told the caller
	err = f.awaitOutcome(ctx, run, events, bound, &result, func(ev workflows.WaitEvent) bool {
		switch e := ev.(type) {
		case workflows.ProbeUnavailable:
			if e.Message != trouble {
				trouble = e.Message
				f.tellCaller(ctx, mcp.LoggingLevelWarning, map[string]any{"message": "the probe cannot be reached; trying again: " + shorten(e.Message, 300), "wait_id": run.GetID()})
			}
		case workflows.Sample:
			noteSample(ctx)
			if token != nil || f.subscribed() { // the message only for a reader
				f.reportProgress(ctx, token, float64(e.Number), float64(e.Expected),
					fmt.Sprintf("sample %d: %s", e.Number, shorten(e.Observation, 120)))
			}
		case workflows.WaitForResult:
			result = e
			noteDetected(ctx, e)
			return true
		}
		return false
	})
	if err != nil && ctx.Err() != nil {
		// The caller went away; the wait runs on to its own bound.
		return nil, ctx.Err()
	}
	if isCanceled(err) {
		return f.cancelledWaitFor(ctx, run.GetID(), run.GetRunID(), maxWaitSec), nil
	}
	return waitForAnswer(result, err), nil
}

// prepareWaitFor parses a wait_for call into the wait it starts or
// attaches to (the caller's own: the principal is part of its ID); a
// non-nil result is the call's answer (bad arguments).
func (f *Front) prepareWaitFor(ctx context.Context, req mcp.CallToolRequest) (sharedWait, *mcp.CallToolResult) {
	spec, err := workflows.ParseWaitFor(rawArgs(req), f.catalog())
	if err != nil {
		return sharedWait{}, mcp.NewToolResultError("wait_for: " + err.Error())
	}
	noteAttributes(ctx, attrWaitCondition.String(string(spec.Until.Kind)), attrProbeTool.String(spec.Probe.Tool))
	hide := f.opts.HideProbeArgValues
	target := workflows.WaitForTarget(spec, hide)
	noteTarget(ctx, target)
	principal := mcpwire.PrincipalFrom(ctx)
	input := workflows.WaitForInput{Spec: spec, Host: f.opts.Host}
	if spec.WakeOnEvent != "" {
		latch := f.latchOf(principal, spec.WakeOnEvent)
		input.Wake = &latch
	}
	return sharedWait{
		id:      spec.WorkflowID(principal),
		summary: workflows.WaitForSummary(spec, hide),
		details: workflows.WaitForDetails(spec, hide),
		memo:    principalMemo(workflows.WaitForMemo(spec, hide), principal),
		attrs: f.startAttributes(ctx, &req, workflows.ToolWaitFor, append(f.hostAttribute(), workflows.StartedRunning(),
			workflows.KeyProbeTool.ValueSet(workflows.KeywordValue(spec.Probe.Tool)), workflows.KeyTarget.ValueSet(target))...),
		workflow:   workflows.WaitForWorkflowName,
		input:      input,
		pollMs:     int64(spec.PollSec) * 1000,
		bound:      spec.MaxWait(),
		maxWaitSec: spec.MaxWaitSec,
	}, nil
}

// waitForAnswer is wait_for's answer for a closed wait.
func waitForAnswer(result workflows.WaitForResult, err error) *mcp.CallToolResult {
	if err != nil {
		return mcp.NewToolResultError("wait_for: " + workflowErrorMessage(err))
	}
	return structuredResult(result)
}

// hostAttribute is the DurawaitHost a wait starts with when this front
// names its host (its own worker's): none otherwise, and the workflow
// upserts the host it picks.
func (f *Front) hostAttribute() []temporal.SearchAttributeUpdate {
	if f.opts.Host == "" {
		return nil
	}
	return []temporal.SearchAttributeUpdate{workflows.KeyHost.ValueSet(f.opts.Host)}
}
