package mcpfront

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

// Durable MCP tasks (protocol 2025-11-25). A task-augmented call of a
// waiting tool returns a task at once; the task is the wait's Temporal
// workflow run (wait_for, wait_for_text) or the wait update on an agent
// invocation (wait_agent), and its ID names that run or update. So
// tasks/get, tasks/result, tasks/cancel and tasks/list are answered from
// Temporal, and keep working across restarts and front ends. Identical waits
// are one wait, so identical task-augmented calls made while it runs get the
// same task.

// defaultTaskTTL is a task's ttl when the namespace's retention of closed
// workflows cannot be read.
const defaultTaskTTL = 24 * time.Hour

// taskTTL is how long a closed task can be read: the namespace's retention
// of closed workflows, read once.
func (f *Front) taskTTL(ctx context.Context) time.Duration {
	f.ttlOnce.Do(func() {
		f.ttl = defaultTaskTTL
		resp, err := f.opts.Temporal.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: f.opts.Namespace})
		if err == nil && resp.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration() > 0 {
			f.ttl = resp.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration()
		}
	})
	return f.ttl
}

// defaultTaskPoll is the poll interval a task suggests when its tool has no
// better one.
const defaultTaskPoll = time.Second

// taskListPage is how many tasks one tasks/list page holds.
const taskListPage = 50

// parseTaskID reads a task ID: a run of a task tool's workflow (a
// wait_for or wait_for_text wait, or an agent invocation: the task of a
// wait_agent call made after it closed), or a wait_agent's update.
func (t toolTable) parseTaskID(id string) (taskRef, error) {
	if wf, upd, ok := strings.Cut(id, "#"); ok && wf != "" && strings.HasPrefix(upd, agentTaskUpdatePrefix) {
		return taskRef{workflowID: wf, updateID: upd}, nil
	}
	if wf, run, ok := strings.Cut(id, "@"); ok && run != "" && !strings.ContainsAny(wf, "#") && t.ofWorkflow(wf) != nil {
		return taskRef{workflowID: wf, runID: run}, nil
	}
	return taskRef{}, badParams(fmt.Errorf("taskId: %q is not a task ID that durawait returned", id))
}

// agentTaskUpdatePrefix starts the update ID of a wait_agent task, followed
// by its creation time in Unix milliseconds and a random suffix.
const agentTaskUpdatePrefix = "task-"

// agentTaskAcceptWait bounds how long a task-augmented wait_agent sends
// its wait update again (retryAgentWait) before the call fails: a task's
// creation answers at once, not at the end of a wait window.
const agentTaskAcceptWait = 30 * time.Second

// newAgentTaskUpdateID names the wait update of a wait_agent task created
// at now.
func newAgentTaskUpdateID(now time.Time) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s%d-%s", agentTaskUpdatePrefix, now.UnixMilli(), hex.EncodeToString(b))
}

func agentTaskCreated(updateID string) time.Time {
	ms, _, _ := strings.Cut(strings.TrimPrefix(updateID, agentTaskUpdatePrefix), "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n)
}

// handleOwn answers the requests durawait serves itself rather than
// mcp-go: the task methods, and task-augmented calls of the waiting tools.
// handled is false for every other request.
func (f *Front) handleOwn(ctx context.Context, msg mcpwire.Request) (resp any, handled bool) {
	if msg.Modern {
		return f.handleModern(ctx, msg)
	}
	switch mcp.MCPMethod(msg.Method) {
	case mcp.MethodTasksGet, mcp.MethodTasksResult, mcp.MethodTasksCancel, mcp.MethodTasksList:
		var result any
		err := f.drained(ctx, func(ctx context.Context) (err error) {
			result, err = f.taskMethod(ctx, msg)
			return err
		})
		if err != nil {
			return mcpwire.ErrorResponse(msg.ID, rpcCode(err), msg.Method+": "+err.Error()), true
		}
		return mcpwire.ResultResponse(msg.ID, result), true
	case mcp.MethodToolsCall:
		var req mcp.CallToolRequest
		if json.Unmarshal(msg.Params, &req.Params) != nil || req.Params.Task == nil {
			return nil, false
		}
		if !f.tools.of(req.Params.Name).task || f.mcp.GetTool(req.Params.Name) == nil {
			return mcpwire.ErrorResponse(msg.ID, mcp.METHOD_NOT_FOUND, fmt.Sprintf(
				"tools/call: tool %q does not run as a task (its execution.taskSupport is forbidden); call it without params.task", req.Params.Name)), true
		}
		var task mcp.Task
		err := f.drained(ctx, func(ctx context.Context) (err error) {
			task, _, err = f.taskCall(ctx, req, nil)
			return err
		})
		if err != nil {
			return mcpwire.ErrorResponse(msg.ID, rpcCode(err), "tools/call: "+err.Error()), true
		}
		return mcpwire.ResultResponse(msg.ID, mcp.NewCreateTaskResult(task)), true
	}
	return nil, false
}

// taskMethod runs tasks/get, tasks/result, tasks/cancel or tasks/list.
func (f *Front) taskMethod(ctx context.Context, msg mcpwire.Request) (any, error) {
	var params struct {
		TaskID string `json:"taskId"`
		Cursor string `json:"cursor"`
	}
	if len(msg.Params) > 0 {
		if err := json.Unmarshal(msg.Params, &params); err != nil {
			return nil, badParams(fmt.Errorf("params: %w", err))
		}
	}
	if mcp.MCPMethod(msg.Method) == mcp.MethodTasksList {
		return f.listTasks(ctx, params.Cursor)
	}
	ref, err := f.tools.parseTaskID(params.TaskID)
	if err != nil {
		return nil, err
	}
	if !workflows.Owns(mcpwire.PrincipalFrom(ctx), ref.workflowID) {
		// Another principal's task reads exactly like an unknown one.
		return nil, taskLookupError(ref, &serviceerror.NotFound{})
	}
	switch mcp.MCPMethod(msg.Method) {
	case mcp.MethodTasksGet:
		task, _, err := f.taskState(ctx, ref)
		if err != nil {
			return nil, err
		}
		return mcp.NewGetTaskResult(task), nil
	case mcp.MethodTasksResult:
		return f.taskResult(ctx, ref)
	default:
		task, err := f.cancelTask(ctx, ref)
		if err != nil {
			return nil, err
		}
		return mcp.NewCancelTaskResult(task), nil
	}
}

// createTask starts (or attaches to) the wait of a task-augmented call and
// returns its task. Bad arguments are an error: there is no task to hold
// them.
func (f *Front) createTask(ctx context.Context, req mcp.CallToolRequest) (mcp.Task, error) {
	if refusal := mcpwire.ArgumentsRefusal(req); refusal != "" {
		return mcp.Task{}, badParams(errors.New(refusal))
	}
	spec := f.tools.of(req.Params.Name)
	if spec.prepare == nil {
		// The task tool without a shared wait to prepare: wait_agent,
		// whose task is an update of the invocation (or its closed run).
		return f.createAgentTask(ctx, req)
	}
	w, bad := spec.prepare(f, ctx, req)
	if bad != nil {
		return mcp.Task{}, badParams(errors.New(resultText(bad)))
	}
	release := func() bool { return false }
	if spec.taskHolds {
		// The task holds the wait: a plain caller attached to it that
		// hangs up must not cancel it. The hold ends with the run, which
		// has its own bound.
		release = f.attached.hold(w.id)
	}
	// Steps 2 and 3 of the dance described at sharedWait.
	f.waitSettled(ctx, w.id)
	report := &startReport{}
	run, err := f.start(context.WithValue(ctx, startReportKey{}, report), w)
	if err != nil {
		release()
		return mcp.Task{}, errors.New(startFailedMessage(spec.name, err))
	}
	noteWait(ctx, run.GetID(), report.how())
	if spec.taskHolds {
		go func() {
			hctx, cancel := context.WithTimeout(context.Background(), w.bound+workflows.LoopGrace+settleTimeout)
			defer cancel()
			_ = f.opts.Temporal.GetWorkflow(hctx, run.GetID(), run.GetRunID()).Get(hctx, nil)
			release()
		}()
	}
	// The task is the run's, which may have begun with an earlier call.
	task, _, err := f.taskState(ctx, taskRef{workflowID: run.GetID(), runID: run.GetRunID()})
	task.PollInterval = &w.pollMs
	return task, err
}

// createAgentTask makes the task of a task-augmented wait_agent call: an
// update of the invocation's workflow, or, when the invocation has
// closed, its run.
func (f *Front) createAgentTask(ctx context.Context, req mcp.CallToolRequest) (mcp.Task, error) {
	if isFanIn(req) {
		return mcp.Task{}, badParams(errors.New("invocation_ids: a wait_agent task waits on one invocation (invocation_id); " +
			"wait on several with a call that is not a task, or make a task per invocation"))
	}
	id, bad := parseInvocation(ctx, req)
	if bad != nil {
		return mcp.Task{}, badParams(errors.New(resultText(bad)))
	}
	ref := taskRef{workflowID: id, updateID: newAgentTaskUpdateID(time.Now())}
	// The sends, and each one's wait for the update's acceptance, end
	// at agentTaskAcceptWait.
	actx, cancel := context.WithTimeout(ctx, agentTaskAcceptWait)
	until, _ := actx.Deadline()
	uerr := f.retryAgentWait(actx, id, until, func() error {
		_, err := f.updateAgentWait(actx, id, ref.updateID, f.opts.Agents.WaitWindow, client.WorkflowUpdateStageAccepted)
		return err
	})
	cancel()
	if uerr == nil {
		// The invocation runs and took the wait: only now is the
		// call attached to it (an unknown or closed one logs no
		// wait line), as on the plain path (handleWaitAgent).
		noteWait(ctx, id, waitAttached)
	} else {
		// A closed invocation takes no update: its task is its run,
		// whose result is the final payload. Any other failure is the
		// call's.
		desc, err := f.opts.Temporal.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return mcp.Task{}, fmt.Errorf("wait_agent: %w", taskLookupError(taskRef{workflowID: id, runID: "latest"}, err))
		}
		if desc.WorkflowExecutionInfo.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return mcp.Task{}, fmt.Errorf("wait_agent: could not wait on the invocation: %w", uerr)
		}
		ref = taskRef{workflowID: id, runID: desc.WorkflowExecutionInfo.Execution.RunId}
	}
	task, _, err := f.taskState(ctx, ref)
	return task, err
}

// taskState reads a task's state; for a closed task it also returns the
// call's answer.
func (f *Front) taskState(ctx context.Context, ref taskRef) (mcp.Task, *mcp.CallToolResult, error) {
	if ref.updateID != "" {
		return f.agentTaskState(ctx, ref)
	}
	desc, err := f.opts.Temporal.DescribeWorkflowExecution(ctx, ref.workflowID, ref.runID)
	if err != nil {
		return mcp.Task{}, nil, taskLookupError(ref, err)
	}
	info := desc.WorkflowExecutionInfo
	task := newTask(ref, info.StartTime.AsTime(), info.StartTime.AsTime(), f.taskTTL(ctx))
	if info.CloseTime != nil {
		task.LastUpdatedAt = info.CloseTime.AsTime().UTC().Format(time.RFC3339Nano)
	}
	switch info.Status {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return task, nil, nil
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		if !f.closedByCancelAgent(ctx, ref) {
			// The tool's own cancelled result, naming who cancelled.
			task.Status, task.StatusMessage = mcp.TaskStatusCancelled, "the wait was cancelled"
			return task, f.runAnswer(ctx, ref), nil
		}
		// An invocation cancel_agent closed: the task's wait answered with
		// the invocation's final payload, as it did when such a close was
		// Completed.
	}
	answer := f.runAnswer(ctx, ref)
	setTerminal(&task, answer)
	return task, answer, nil
}

// closedByCancelAgent reports whether the Canceled run ref is an agent
// invocation cancel_agent closed (its close carries its final payload),
// not one an operator cancelled.
func (f *Front) closedByCancelAgent(ctx context.Context, ref taskRef) bool {
	if !strings.HasPrefix(ref.workflowID, workflows.AgentIDPrefix) {
		return false
	}
	_, err := invocationResult(ctx, f.opts.Temporal.GetWorkflow(ctx, ref.workflowID, ref.runID))
	return err == nil
}

// agentTaskState reads the state of a wait_agent task from its update.
func (f *Front) agentTaskState(ctx context.Context, ref taskRef) (mcp.Task, *mcp.CallToolResult, error) {
	created := agentTaskCreated(ref.updateID)
	task := newTask(ref, created, created, f.taskTTL(ctx))
	w, running, perr, err := f.agentUpdate(ctx, ref, ref.updateID)
	switch {
	case err != nil:
		return mcp.Task{}, nil, err
	case running:
		return task, nil, nil
	}
	answer := f.agentAnswer(ctx, ref.workflowID, w.InvocationPayload, perr)
	task.LastUpdatedAt = time.Now().UTC().Format(time.RFC3339Nano)
	setTerminal(&task, answer)
	return task, answer, nil
}

// taskResult waits for a task to close and returns its call's answer.
func (f *Front) taskResult(ctx context.Context, ref taskRef) (mcp.TaskResultResult, error) {
	var answer *mcp.CallToolResult
	if ref.updateID != "" {
		var payload workflows.InvocationPayload
		err := f.opts.Temporal.GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions{
			WorkflowID: ref.workflowID, UpdateID: ref.updateID,
		}).Get(ctx, &payload)
		if err != nil && ctx.Err() != nil {
			return mcp.TaskResultResult{}, ctx.Err()
		}
		answer = f.agentAnswer(ctx, ref.workflowID, payload, err)
	} else {
		if _, err := f.opts.Temporal.DescribeWorkflowExecution(ctx, ref.workflowID, ref.runID); err != nil {
			return mcp.TaskResultResult{}, taskLookupError(ref, err)
		}
		answer = f.runAnswer(ctx, ref)
		if ctx.Err() != nil {
			return mcp.TaskResultResult{}, ctx.Err()
		}
	}
	return mcp.TaskResultResult{
		Result:            mcp.Result{Meta: mcp.WithRelatedTask(ref.String())},
		Content:           answer.Content,
		StructuredContent: answer.StructuredContent,
		IsError:           answer.IsError,
	}, nil
}

// runAnswer waits for a task's workflow run to close and shapes its result
// as the answer of the task's tool.
func (f *Front) runAnswer(ctx context.Context, ref taskRef) *mcp.CallToolResult {
	spec := f.tools.ofWorkflow(ref.workflowID)
	if spec == nil || spec.runAnswer == nil {
		return mcp.NewToolResultError(fmt.Sprintf("task %s: durawait has no tool whose task this is", ref))
	}
	return spec.runAnswer(f, ctx, ref)
}

// waitForRunAnswer is wait_for's answer from its run ref.
func (f *Front) waitForRunAnswer(ctx context.Context, ref taskRef) *mcp.CallToolResult {
	var result workflows.WaitForResult
	err := getResult(ctx, f.opts.Temporal.GetWorkflow(ctx, ref.workflowID, ref.runID), &result)
	if isCanceled(err) {
		return f.cancelledWaitFor(ctx, ref.workflowID, ref.runID, 0)
	}
	return waitForAnswer(result, err)
}

// textRunAnswer is wait_for_text's answer from its run ref.
func (f *Front) textRunAnswer(ctx context.Context, ref taskRef) *mcp.CallToolResult {
	var out workflows.TextWaitOutcome
	err := getResult(ctx, f.opts.Temporal.GetWorkflow(ctx, ref.workflowID, ref.runID), &out)
	if isCanceled(err) {
		return f.cancelledText(ctx, ref.workflowID, ref.runID)
	}
	return textAnswer(out, err)
}

// agentRunAnswer is wait_agent's answer from the closed invocation run
// ref: its final payload.
func (f *Front) agentRunAnswer(ctx context.Context, ref taskRef) *mcp.CallToolResult {
	payload, err := invocationResult(ctx, f.opts.Temporal.GetWorkflow(ctx, ref.workflowID, ref.runID))
	if isCanceled(err) {
		return structuredResult(f.cancelledInvocation(ctx, ref.workflowID, err))
	}
	if err != nil {
		return mcp.NewToolResultError("wait_agent: the invocation's workflow ended without a result: " + workflowErrorMessage(err))
	}
	return structuredResult(payload)
}

// cancelTask cancels a running task's wait. A wait_agent task is a wait on
// an invocation, which only cancel_agent stops.
func (f *Front) cancelTask(ctx context.Context, ref taskRef) (mcp.Task, error) {
	task, _, err := f.taskState(ctx, ref)
	if err != nil {
		return mcp.Task{}, err
	}
	if task.Status.IsTerminal() {
		return mcp.Task{}, badParams(fmt.Errorf("task %s is already %s", ref, task.Status))
	}
	if strings.HasPrefix(ref.workflowID, workflows.AgentIDPrefix) {
		return mcp.Task{}, badParams(fmt.Errorf("task %s waits on agent invocation %s and ends with its window; to stop the agent call cancel_agent", ref, ref.workflowID))
	}
	if err := f.opts.Temporal.CancelWorkflow(ctx, ref.workflowID, ref.runID); err != nil {
		return mcp.Task{}, taskLookupError(ref, err)
	}
	// The run closes as soon as its workflow sees the cancellation.
	wctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	_ = f.opts.Temporal.GetWorkflow(wctx, ref.workflowID, ref.runID).Get(wctx, nil)
	task, _, err = f.taskState(ctx, ref)
	return task, err
}

// listTasks lists the runs of wait_for and wait_for_text, newest first. A
// wait_agent task is found through list_agents.
func (f *Front) listTasks(ctx context.Context, cursor string) (mcp.ListTasksResult, error) {
	principal := mcpwire.PrincipalFrom(ctx)
	token, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return mcp.ListTasksResult{}, badParams(fmt.Errorf("cursor: %q is not a cursor that tasks/list returned", cursor))
	}
	resp, err := f.opts.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query:         fmt.Sprintf("WorkflowType IN ('%s', '%s', '%s')", workflows.WaitForWorkflowName, workflows.WaitForTextWorkflowName, workflows.WaitForEventWorkflowName),
		PageSize:      taskListPage,
		NextPageToken: token,
	})
	if err != nil {
		return mcp.ListTasksResult{}, fmt.Errorf("could not list the waits (Temporal engine unavailable?): %w", err)
	}
	out := mcp.ListTasksResult{Tasks: []mcp.Task{}}
	for _, e := range resp.Executions {
		if !workflows.Owns(principal, e.Execution.WorkflowId) {
			continue // another principal's
		}
		ref := taskRef{workflowID: e.Execution.WorkflowId, runID: e.Execution.RunId}
		task, _, err := f.taskState(ctx, ref)
		var gone notFoundError
		if errors.As(err, &gone) {
			continue // closed and gone since the listing
		}
		if err != nil {
			return mcp.ListTasksResult{}, err
		}
		out.Tasks = append(out.Tasks, task)
	}
	if len(resp.NextPageToken) > 0 {
		out.NextCursor = mcp.Cursor(base64.RawURLEncoding.EncodeToString(resp.NextPageToken))
	}
	return out, nil
}

func newTask(ref taskRef, created, updated time.Time, ttl time.Duration) mcp.Task {
	return mcp.NewTask(ref.String(),
		mcp.WithTaskCreatedAt(created.UTC().Format(time.RFC3339Nano)),
		mcp.WithTaskTTL(ttl.Milliseconds()),
		mcp.WithTaskPollInterval(defaultTaskPoll.Milliseconds()),
		func(t *mcp.Task) { t.LastUpdatedAt = updated.UTC().Format(time.RFC3339Nano) })
}

// setTerminal records a closed task's status from its answer: an isError
// answer is a failed task (protocol 2025-11-25 lets a receiver say so), with
// the error's text as the status message.
func setTerminal(task *mcp.Task, answer *mcp.CallToolResult) {
	if answer.IsError {
		task.Status, task.StatusMessage = mcp.TaskStatusFailed, shorten(resultText(answer), 300)
		return
	}
	task.Status = mcp.TaskStatusCompleted
}

// taskLookupError explains why a task could not be read.
func taskLookupError(ref taskRef, err error) error {
	var notFound *serviceerror.NotFound
	var invalid *serviceerror.InvalidArgument
	if errors.As(err, &notFound) || errors.As(err, &invalid) {
		return notFoundError{badParams(fmt.Errorf("taskId: no task %s (unknown, or closed longer ago than its ttl)", ref))}
	}
	return fmt.Errorf("could not read task %s (Temporal engine unavailable?): %w", ref, err)
}

// paramsError is a task request's own fault: JSON-RPC invalid params. Any
// other error (the engine unavailable, say) is an internal error.
type paramsError struct{ error }

func (e paramsError) Unwrap() error { return e.error }

func badParams(err error) error { return paramsError{err} }

// notFoundError is a task that Temporal does not know (any more).
type notFoundError struct{ error }

func (e notFoundError) Unwrap() error { return e.error }

// rpcCode is the JSON-RPC error code of a task request's error.
func rpcCode(err error) int {
	var p paramsError
	if errors.As(err, &p) {
		return mcp.INVALID_PARAMS
	}
	return mcp.INTERNAL_ERROR
}

// resultText is the text content of a tool result.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// observedTask runs createTask for a task-augmented call, instrumented
// like a plain call of the tool: a span named after the tool (parent as
// for a plain call: _meta's trace context, else the request's span), so
// the Temporal start and the wait's workflow are in the caller's trace;
// the call counts in durawait.waits.started and
// durawait.waits.start_or_attach with task=true. The task's end is not
// counted (ended, in_flight, duration): the task is answered later, by
// tasks/result on any front end, or never read at all.
func (f *Front) observedTask(ctx context.Context, req mcp.CallToolRequest) (task mcp.Task, err error) {
	t := f.taskTelemetry(f.tools.of(req.Params.Name))
	if t == nil {
		return f.createTask(ctx, req)
	}
	ctx, span := t.startSpan(ctx, req)
	rec := &callRecord{t: t, task: true}
	ctx = context.WithValue(ctx, callRecordKey{}, rec)
	if t.started != nil {
		t.started.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(attrTool.String(t.spec.name), attrTask.Bool(true))))
	}
	defer func() {
		if !span.IsRecording() {
			span.End()
			return
		}
		attrs := append(rec.noted(), attrTask.Bool(true))
		if how := rec.waitStart(); how != "" {
			attrs = append(attrs, attrWaitStart.String(how))
		}
		if err == nil {
			attrs = append(attrs, attribute.String("task_id", task.TaskId))
		} else {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.SetAttributes(attrs...)
		span.End()
	}()
	return f.createTask(ctx, req)
}

// taskCall runs a task-augmented call of tool (createTask, instrumented by
// observedTask) as a tool call of its own for the events and the wait log
// lines: started once its wait is started or attached to (noteWait in
// createTask), ended when the task is returned, with outcome
// workflows.OutcomeTaskCreated and the CreateTaskResult as the result, or "error".
// A panic ends the call as an error and goes on. inline, when set, may
// give the call's answer instead of the task (the tasks extension's call
// whose wait ended at once): the call then ends as a plain call with that
// answer.
func (f *Front) taskCall(ctx context.Context, req mcp.CallToolRequest, inline func(context.Context, mcp.Task) *mcp.CallToolResult) (task mcp.Task, answer *mcp.CallToolResult, err error) {
	s := f.tools.of(req.Params.Name)
	c := &toolCall{f: f, spec: s, id: newCallID(), begun: time.Now(), who: mcpwire.CallerFrom(ctx), client: f.client(ctx, &req)}
	returned := false
	defer func() {
		switch {
		case !returned:
			panicked := recover()
			c.finish(workflows.OutcomeError, true, fmt.Sprintf("the %s task handler panicked: %v", c.spec.name, panicked))
			if panicked != nil {
				panic(panicked)
			}
		case err != nil:
			c.finish(workflows.OutcomeError, true, err.Error())
		case answer != nil:
			c.end(ctx, answer, nil)
		default:
			c.finish(workflows.OutcomeTaskCreated, false, mcp.NewCreateTaskResult(task))
		}
	}()
	ctx = context.WithValue(ctx, toolCallKey{}, c)
	task, err = f.observedTask(ctx, req)
	if err == nil && inline != nil {
		answer = inline(ctx, task)
	}
	returned = true
	return task, answer, err
}
