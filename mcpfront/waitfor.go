package mcpfront

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
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
	w, bad := f.prepareWaitFor(ctx, req)
	if bad != nil {
		return bad, nil
	}
	run, events, unsubscribe, err := f.startOrAttach(ctx, w)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return startFailed("wait_for", err), nil
	}
	defer unsubscribe()

	token := progressToken(req)
	var result workflows.WaitForResult
	err = f.awaitOutcome(ctx, run, events, &result, func(ev any) bool {
		switch e := ev.(type) {
		case workflows.Sample:
			if token != nil {
				f.sendProgress(ctx, token, float64(e.Number), float64(e.Expected),
					fmt.Sprintf("sample %d: %s", e.Number, shorten(e.Observation, 120)))
			}
		case workflows.WaitForResult:
			result = e
			return true
		}
		return false
	})
	if err != nil && ctx.Err() != nil {
		// The caller went away; the wait runs on to its own bound.
		return nil, ctx.Err()
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
	principal := principalFrom(ctx)
	return sharedWait{
		id:       spec.WorkflowID(principal),
		summary:  waitSummary(spec),
		memo:     principalMemo(map[string]any{"probe_tool": spec.Probe.Tool, "probe_args": string(spec.Probe.Args), "until": spec.Until}, principal),
		workflow: workflows.WaitForWorkflowName,
		input:    workflows.WaitForInput{Spec: spec, HeartbeatTimeout: f.opts.HeartbeatTimeout},
		pollMs:   int64(spec.PollSec) * 1000,
	}, nil
}

// waitForAnswer is wait_for's answer for a closed wait.
func waitForAnswer(result workflows.WaitForResult, err error) *mcp.CallToolResult {
	if err != nil {
		return mcp.NewToolResultError("wait_for: " + workflowErrorMessage(err))
	}
	return structuredResult(result)
}

// startFailed answers a call whose wait could not be started.
func startFailed(tool string, err error) *mcp.CallToolResult {
	return mcp.NewToolResultError(fmt.Sprintf("%s: could not start the wait (Temporal engine unavailable?): %v", tool, err))
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

// sendProgress sends one notifications/progress for the caller's token on
// the caller's own stream; total 0 is left out.
func (f *Front) sendProgress(ctx context.Context, token mcp.ProgressToken, progress, total float64, message string) {
	params := map[string]any{"progressToken": token, "progress": progress, "message": message}
	if total > 0 {
		params["total"] = total
	}
	if err := f.mcp.SendNotificationToClient(ctx, "notifications/progress", params); err != nil {
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
