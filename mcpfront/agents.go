package mcpfront

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

var (
	//go:embed schemas/start_agent.input.json
	startAgentInputSchema []byte
	//go:embed schemas/invocation_id.input.json
	invocationIDInputSchema []byte
	//go:embed schemas/invocation.output.json
	invocationOutputSchema []byte
	//go:embed schemas/wait_agent.input.json
	waitAgentInputSchema []byte
	//go:embed schemas/wait_agent.output.json
	waitAgentOutputSchema []byte
	//go:embed schemas/list_agents.input.json
	listAgentsInputSchema []byte
	//go:embed schemas/list_agents.output.json
	listAgentsOutputSchema []byte
)

// invocationIDOf is the invocation ID (its workflow ID) of principal's
// start_agent call: derived from the call when it has a request_id, else
// new.
func invocationIDOf(principal string, spec workflows.AgentSpec) string {
	if spec.RequestID != "" {
		return workflows.InvocationIDFor(principal, spec)
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	return workflows.InvocationID(principal, nonce)
}

// unknownInvocationError is the answer about an invocation ID that
// start_agent did not return to this principal: never started, or another
// principal's.
type unknownInvocationError struct{ id string }

func (e unknownInvocationError) Error() string {
	return fmt.Sprintf("invocation_id: %q is not an invocation ID returned by start_agent", e.id)
}

// unknownInvocation is the answer about an invocation ID that start_agent
// did not return to this principal.
func unknownInvocation(id string) error { return unknownInvocationError{id: id} }

// parseInvocation reads the invocation ID of a wait_agent or cancel_agent
// call, the caller's own; bad is the call's answer when it is not.
func parseInvocation(ctx context.Context, req mcp.CallToolRequest) (id string, bad *mcp.CallToolResult) {
	id, err := workflows.ParseInvocationID(rawArgs(req))
	if err != nil {
		return "", mcp.NewToolResultError(req.Params.Name + ": " + err.Error())
	}
	noteAttributes(ctx, attrInvocationID.String(id))
	if !workflows.Owns(mcpwire.PrincipalFrom(ctx), id) {
		return "", mcp.NewToolResultError(req.Params.Name + ": " + unknownInvocation(id).Error())
	}
	return id, nil
}

// parseStartAgent reads a start_agent call into the invocation it starts
// and that invocation's ID; bad is the call's answer when the arguments
// are refused.
func (f *Front) parseStartAgent(ctx context.Context, req mcp.CallToolRequest) (spec workflows.AgentSpec, id string, bad *mcp.CallToolResult) {
	spec, err := workflows.ParseStartAgent(rawArgs(req), f.opts.Agents.Limits)
	if err != nil {
		return spec, "", mcp.NewToolResultError("start_agent: " + err.Error())
	}
	// The invocation's ID is named by the result, once it started: a start
	// that fails names none.
	noteAttributes(ctx, attrProvider.String(spec.Provider))
	return spec, invocationIDOf(mcpwire.PrincipalFrom(ctx), spec), nil
}

func (f *Front) handleStartAgent(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	spec, id, bad := f.parseStartAgent(ctx, req)
	if bad != nil {
		return bad, nil
	}
	principal := mcpwire.PrincipalFrom(ctx)
	target := workflows.AgentTarget(spec)
	noteTarget(ctx, target)
	opts := client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: f.opts.TaskQueue,
		// The ID is this call's own (or, with a request_id, every identical
		// call's): the policies make a retried start find what an earlier
		// attempt or call started (running, or already closed), never
		// start it twice.
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowTaskTimeout:      workflows.TaskTimeout,
		StaticSummary:            workflows.AgentSummary(spec),
		StaticDetails:            workflows.AgentDetails(spec, int(f.opts.Agents.MaxRun/time.Second)),
		Memo:                     principalMemo(agentMemo(spec), principal),
		TypedSearchAttributes: f.startAttributes(ctx, &req, workflows.ToolStartAgent,
			workflows.KeyAgentProvider.ValueSet(workflows.KeywordValue(spec.Provider)), workflows.KeyTarget.ValueSet(target)),
	}
	err := f.starts.do(ctx, func(ctx context.Context) error {
		_, err := f.opts.Temporal.ExecuteWorkflow(ctx, opts, workflows.AgentWorkflowName,
			workflows.AgentInvocationInput{Spec: spec, MaxRun: f.opts.Agents.MaxRun, AnswerWait: f.opts.Agents.AnswerWait})
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			return nil // an earlier attempt started it, and it already ended
		}
		return err
	})
	switch {
	case errors.Is(err, ErrOverloaded):
		if spec.RequestID != "" {
			return mcp.NewToolResultError(fmt.Sprintf("start_agent: %v; invocation %s may have started after all: call again with the same request_id", err, id)), nil
		}
		return mcp.NewToolResultError(fmt.Sprintf("start_agent: %v; invocation %s may have started after all: list_agents shows it if so, else call again", err, id)), nil
	case err != nil:
		return mcp.NewToolResultError(fmt.Sprintf("start_agent: could not start the invocation: %v", err)), nil
	}
	noteWait(ctx, id, waitStarted)
	return structuredResult(workflows.InvocationPayload{
		InvocationID: id, Status: workflows.AgentRunning, Reason: workflows.AgentReasonStarted,
	}), nil
}

func (f *Front) handleWaitAgent(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	spec, err := workflows.ParseWaitAgent(rawArgs(req))
	if err != nil {
		return mcp.NewToolResultError("wait_agent: " + err.Error()), nil
	}
	if !spec.Single {
		return f.handleWaitAgents(ctx, req, spec)
	}
	id, bad := parseInvocation(ctx, req)
	if bad != nil {
		return bad, nil
	}
	events, unsubscribe := f.subscribe(sharedWait{id: id})
	defer unsubscribe()
	var (
		answer  workflows.AgentWaitAnswer
		waitErr error
		done    = make(chan struct{})
	)
	until := time.Now().Add(f.opts.Agents.WaitWindow)
	// The wait is releasable, as each of a fan-in's is: it returns a
	// blocker without taking it, and the call acks the blocker it reports
	// (below). A caller that hangs up acks nothing, and its wait is
	// released: the blocker waits for the next call instead of going to
	// nobody.
	release := newReleaseKey("wait-agent")
	go func() {
		defer close(done)
		answer, waitErr = f.awaitInvocation(ctx, id, until, release, func() { noteWait(ctx, id, waitAttached) })
	}()
	token := progressToken(req)
	report := func(ev workflows.WaitEvent) {
		if p, ok := ev.(workflows.AgentProgress); ok {
			f.reportProgress(ctx, token, float64(p.Step), 0, p.Message)
		}
	}
	for waiting := true; waiting; {
		select {
		case ev := <-events:
			report(ev)
		case <-done:
			waiting = false
		}
	}
	// What the run reported before the wait returned (its exit, say) goes
	// out too.
	drainPending(events, report)
	if ctx.Err() != nil || waitErr != nil {
		// The caller hung up, or the wait failed while the engine may
		// still hold it: it is released (signalInvocation is not
		// cancelled with ctx), and a blocker it returned is not acked.
		go f.signalInvocation(ctx, id, workflows.AgentReleaseWaitSignal, workflows.AgentReleaseWait{Key: release})
	}
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case waitErr != nil:
		return mcp.NewToolResultError("wait_agent: " + waitErr.Error()), nil
	}
	f.ackBlockers(ctx, []string{id}, []workflows.AgentWaitAnswer{answer})
	return f.agentAnswer(ctx, id, answer.InvocationPayload, nil), nil
}

// awaitInvocation waits on invocation id, as one wait_agent call does, until
// it answers (it finished, or hit a blocker) or until passes, and returns
// its answer; or the error the caller should read (an unknown invocation,
// an engine out of reach). A wait the invocation accepts calls attached
// first. With release set, the wait is releasable
// (workflows.AgentWaitRequest.Release).
func (f *Front) awaitInvocation(ctx context.Context, id string, until time.Time, release string, attached func()) (workflows.AgentWaitAnswer, error) {
	var payload workflows.AgentWaitAnswer
	accepted := false
	updateID := newAgentWaitUpdateID()
	waitErr := f.retryAgentWait(ctx, id, until, func() error {
		// A send again asks only for what is left of the call's window
		// (an update already accepted keeps its own).
		window := max(time.Until(until), time.Second)
		handle, err := f.sendAgentWait(ctx, id, updateID, workflows.AgentWaitRequest{
			Window: window, Principal: mcpwire.PrincipalFrom(ctx), Answers: answersBlockers(ctx), Release: release,
		}, client.WorkflowUpdateStageAccepted)
		if err != nil {
			return err
		}
		if !accepted {
			// The invocation runs and took the wait: only now is the call
			// attached to it (an unknown or closed one logs no wait line).
			accepted = true
			if attached != nil {
				attached()
			}
		}
		return handle.Get(ctx, &payload)
	})
	switch {
	case waitErr == nil:
		return payload, nil
	case ctx.Err() != nil:
		return workflows.AgentWaitAnswer{}, ctx.Err()
	case !accepted && updateMayPass(waitErr) && !time.Now().Before(until):
		// The call's window ran out before the engine delivered its wait
		// (a restarted engine with a backlog aborts updates): a running
		// invocation answers as any window's end does. A wait it accepted
		// may have taken a blocker with it, so that one answers as below.
		if elapsed, ok := f.windowElapsed(ctx, id); ok {
			return workflows.AgentWaitAnswer{InvocationPayload: elapsed}, nil
		}
	}
	// A finished invocation takes no updates: its result is the answer.
	final, ferr := f.finalPayload(ctx, id)
	switch {
	case errors.Is(ferr, errRunningUnanswered):
		return workflows.AgentWaitAnswer{}, fmt.Errorf("%v (the wait failed: %v)", ferr, waitErr)
	case ferr != nil:
		return workflows.AgentWaitAnswer{}, ferr
	}
	return workflows.AgentWaitAnswer{InvocationPayload: final}, nil
}

// windowElapsed is wait_agent's answer at the end of its window for an
// invocation that is running and never took this call's wait, read from
// the engine's record of it (status running, reason wait_elapsed,
// elapsed_ms): what the invocation's own answer says at a window's end,
// without the output it had shown; a blocker it saw is left for the next
// call, which it delivers then. ok is false when the invocation is not running (its result is
// the answer) or cannot be read.
func (f *Front) windowElapsed(ctx context.Context, id string) (workflows.InvocationPayload, bool) {
	desc, err := f.opts.Temporal.DescribeWorkflowExecution(ctx, id, "")
	if err != nil || desc.WorkflowExecutionInfo.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING ||
		desc.WorkflowExecutionInfo.GetStartTime() == nil {
		return workflows.InvocationPayload{}, false
	}
	started := desc.WorkflowExecutionInfo.GetStartTime().AsTime()
	return workflows.InvocationPayload{
		InvocationID: id, Status: workflows.AgentRunning, Reason: workflows.AgentReasonWaitElapsed,
		ElapsedMs: time.Since(started).Milliseconds(),
	}, true
}

// updateAgentWait sends the wait update, of window, to an invocation, with
// updateID when not empty, and returns once it reaches stage.
func (f *Front) updateAgentWait(ctx context.Context, id, updateID string, window time.Duration, stage client.WorkflowUpdateStage) (client.WorkflowUpdateHandle, error) {
	return f.sendAgentWait(ctx, id, updateID, workflows.AgentWaitRequest{
		Window: window, Principal: mcpwire.PrincipalFrom(ctx), Answers: answersBlockers(ctx),
	}, stage)
}

// sendAgentWait sends the wait update req to an invocation, with updateID
// when not empty, and returns once it reaches stage.
func (f *Front) sendAgentWait(ctx context.Context, id, updateID string, req workflows.AgentWaitRequest, stage client.WorkflowUpdateStage) (client.WorkflowUpdateHandle, error) {
	return f.opts.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   id,
		UpdateID:     updateID,
		UpdateName:   workflows.AgentWaitUpdate,
		Args:         []any{req},
		WaitForStage: stage,
	})
}

// newReleaseKey names one wait_agent call's release key
// (workflows.AgentWaitRequest.Release): kind, then random bits.
func newReleaseKey(kind string) string {
	return kind + "-" + strings.TrimPrefix(newAgentWaitUpdateID(), "wait-")
}

// newAgentWaitUpdateID names one wait_agent call's wait update. The call
// sends it again under the same name when the engine could not deliver
// it, so an update the invocation had already accepted is re-attached,
// not doubled.
func newAgentWaitUpdateID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "wait-" + hex.EncodeToString(b)
}

// retryAgentWait runs send (a wait update to invocation id, and its
// outcome) until it succeeds, and again after a failure the engine may
// get past while the invocation runs: its host restarting takes the
// invocation's workflow task with it, and the engine aborts the updates
// that task was to deliver ("workflow update was aborted", or "not
// ready" after the task failed). A failure that will not pass (the
// update's own error, an unknown or closed invocation, a cancelled call)
// or one still there at until is returned. The sends are paced as a busy
// engine's starts are (newBackoff).
func (f *Front) retryAgentWait(ctx context.Context, id string, until time.Time, send func() error) error {
	pauses := newBackoff()
	for {
		err := send()
		if err == nil || !updateMayPass(err) || ctx.Err() != nil || !time.Now().Before(until) {
			return err
		}
		desc, derr := f.opts.Temporal.DescribeWorkflowExecution(ctx, id, "")
		if derr != nil || desc.WorkflowExecutionInfo.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return err
		}
		f.opts.Logger.Debug("a wait update was not delivered; sending it again", "invocation", id, "error", err)
		if pauses.wait(ctx) != nil {
			return err
		}
	}
}

// updateMayPass reports whether a wait update's failure may pass when the
// update is sent again: not the update handler's own error, nor the
// engine's word that the invocation is unknown, closed, or the request
// wrong.
func updateMayPass(err error) bool {
	var (
		app          *temporal.ApplicationError
		canceled     *temporal.CanceledError
		notFound     *serviceerror.NotFound
		invalid      *serviceerror.InvalidArgument
		precondition *serviceerror.FailedPrecondition
		denied       *serviceerror.PermissionDenied
	)
	return !errors.As(err, &app) && !errors.As(err, &canceled) && !errors.As(err, &notFound) &&
		!errors.As(err, &invalid) && !errors.As(err, &precondition) && !errors.As(err, &denied)
}

// agentAnswer is wait_agent's answer once the wait update returned payload
// or err.
func (f *Front) agentAnswer(ctx context.Context, id string, payload workflows.InvocationPayload, err error) *mcp.CallToolResult {
	if err != nil {
		// A finished invocation takes no updates: its result is the answer.
		final, ferr := f.finalPayload(ctx, id)
		switch {
		case errors.Is(ferr, errRunningUnanswered):
			return mcp.NewToolResultError(fmt.Sprintf("wait_agent: %v (the wait failed: %v)", ferr, err))
		case ferr != nil:
			return mcp.NewToolResultError("wait_agent: " + ferr.Error())
		}
		return structuredResult(final)
	}
	f.tellBlocker(ctx, id, payload)
	return structuredResult(f.namedCanceller(ctx, payload))
}

// tellBlocker sends the caller a log notification (warning) of the blocker
// payload reports, if any.
func (f *Front) tellBlocker(ctx context.Context, id string, payload workflows.InvocationPayload) {
	if payload.Reason == workflows.AgentReasonExecutionBlocked && payload.Error != nil {
		f.tellCaller(ctx, mcp.LoggingLevelWarning, map[string]any{
			"message": "agent blocked (" + payload.Error.Code + "): " + shorten(payload.Error.Message, 300), "invocation_id": id, "blocker": payload.Error.Code,
		})
	}
}

// agentMemo is an invocation's memo: start_agent's arguments (the prompt
// cut to its start, as list_agents shows it) and its status, which the
// workflow updates when the run ends.
func agentMemo(spec workflows.AgentSpec) map[string]any {
	m := workflows.AgentMemo(spec)
	m["prompt"] = shorten(spec.Prompt, 200)
	m["status"] = string(workflows.AgentRunning)
	return m
}

// errRunningUnanswered is finalPayload's answer for an invocation that
// still runs: its wait failed, and the client should call again.
var errRunningUnanswered = errors.New("the invocation is running but did not answer; call again")

// finalPayload reads a closed invocation's result, or explains why not.
func (f *Front) finalPayload(ctx context.Context, id string) (workflows.InvocationPayload, error) {
	desc, err := f.opts.Temporal.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return workflows.InvocationPayload{}, unknownInvocation(id)
		}
		return workflows.InvocationPayload{}, fmt.Errorf("could not reach the invocation (Temporal engine unavailable?): %v", err)
	}
	noteAttributes(ctx, attrProvider.String(memoString(desc.WorkflowExecutionInfo.GetMemo(), "provider")))
	if desc.WorkflowExecutionInfo.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return workflows.InvocationPayload{}, errRunningUnanswered
	}
	payload, err := invocationResult(ctx, f.opts.Temporal.GetWorkflow(ctx, id, ""))
	if err != nil {
		if isCanceled(err) {
			// An operator cancelled it through Temporal (a cancel_agent's
			// Canceled carries its payload).
			return f.cancelledInvocation(ctx, id, err), nil
		}
		return workflows.InvocationPayload{}, fmt.Errorf("the invocation's workflow ended without a result: %v", workflowErrorMessage(err))
	}
	return payload, nil
}

// invocationResult is the final payload of an invocation's closed run:
// its result, or what its Canceled (cancel_agent) or Failed (a failed
// agent) close carries (workflows.InvocationFromError).
func invocationResult(ctx context.Context, run client.WorkflowRun) (workflows.InvocationPayload, error) {
	var payload workflows.InvocationPayload
	err := getResult(ctx, run, &payload)
	if carried, ok := workflows.InvocationFromError(err); ok {
		return carried, nil
	}
	return payload, err
}

func (f *Front) handleCancelAgent(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, bad := parseInvocation(ctx, req)
	if bad != nil {
		return bad, nil
	}
	err := f.opts.Temporal.SignalWorkflow(ctx, id, "", workflows.AgentCancelSignal, workflows.AgentCancelRequest{Principal: mcpwire.PrincipalFrom(ctx)})
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		// Unknown, or already finished: a finished invocation keeps its result.
		final, ferr := f.finalPayload(ctx, id)
		if ferr != nil {
			return mcp.NewToolResultError("cancel_agent: " + ferr.Error()), nil
		}
		return structuredResult(final), nil
	case err != nil:
		return mcp.NewToolResultError(fmt.Sprintf("cancel_agent: could not reach the invocation (Temporal engine unavailable?): %v", err)), nil
	}
	wctx, cancel := context.WithTimeout(ctx, f.opts.Agents.CancelWait)
	defer cancel()
	payload, err := invocationResult(wctx, f.opts.Temporal.GetWorkflow(wctx, id, ""))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return mcp.NewToolResultError(fmt.Sprintf("cancel_agent: cancellation requested, but the CLI had not stopped after %s; wait_agent returns its final state: %v",
			f.opts.Agents.CancelWait, workflowErrorMessage(err))), nil
	}
	return structuredResult(payload), nil
}

// agentListItem is one row of list_agents.
type agentListItem struct {
	InvocationID string `json:"invocation_id"`
	Status       string `json:"status"`
	Provider     string `json:"provider"`
	Cwd          string `json:"cwd,omitempty"`
	Prompt       string `json:"prompt,omitempty"`
	StartedAt    string `json:"started_at"`
	ClosedAt     string `json:"closed_at,omitempty"`
}

func (f *Front) handleListAgents(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if bad := noArguments(req); bad != nil {
		return bad, nil
	}
	principal := mcpwire.PrincipalFrom(ctx)
	items := []agentListItem{}
	var token []byte
	for {
		resp, err := f.opts.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         fmt.Sprintf("WorkflowType = '%s'", workflows.AgentWorkflowName),
			NextPageToken: token,
		})
		if err != nil {
			return mcp.NewToolResultError(fmt.Sprintf("list_agents: could not list invocations: %v", err)), nil
		}
		for _, e := range resp.Executions {
			if !workflows.Owns(principal, e.Execution.WorkflowId) {
				continue
			}
			item := agentListItem{
				InvocationID: e.Execution.WorkflowId,
				StartedAt:    e.StartTime.AsTime().UTC().Format(time.RFC3339Nano),
			}
			memo := map[string]string{}
			for k, v := range e.GetMemo().GetFields() {
				var s string
				if converter.GetDefaultDataConverter().FromPayload(v, &s) == nil {
					memo[k] = s
				}
			}
			item.Provider, item.Cwd, item.Prompt, item.Status = memo["provider"], memo["cwd"], memo["prompt"], memo["status"]
			switch e.Status {
			case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
				item.Status = string(workflows.AgentRunning)
			case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
			case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
				item.Status = string(workflows.AgentCancelled)
			default:
				item.Status = string(workflows.AgentFailed)
			}
			if e.CloseTime != nil {
				item.ClosedAt = e.CloseTime.AsTime().UTC().Format(time.RFC3339Nano)
			}
			items = append(items, item)
		}
		token = resp.NextPageToken
		if len(token) == 0 {
			break
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].StartedAt > items[j].StartedAt })
	return structuredResult(map[string]any{"invocations": items}), nil
}

// memoString is the string memo field key, or "".
func memoString(memo *commonpb.Memo, key string) string {
	var s string
	if p := memo.GetFields()[key]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &s)
	}
	return s
}
