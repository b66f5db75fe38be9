package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

// The tasks extension of protocol 2026-07-28 (io.modelcontextprotocol/tasks,
// specified in modelcontextprotocol/ext-tasks). A client that declares it
// in a tools/call's _meta may be answered with a task instead of the
// result; durawait does so for its task tools (wait_for, wait_for_text,
// wait_agent) when the result is not there within inlineWindow. The task
// is the one a 2025-11-25 client gets (the wait's workflow run, or the
// wait update on an agent invocation), so tasks/get, tasks/update and
// tasks/cancel are answered from Temporal by any front end, across
// restarts, and only for the principal who made the call.

// inlineWindow is how long a task tool's call by a client that declared the
// extension waits for its result before it answers with a task instead: a
// wait whose condition already holds (its first sample matches, the agent
// has already finished) answers inline, as a plain call would; any longer
// wait becomes a task at once, rather than holding the request open.
const inlineWindow = time.Second

// extTask is a task as the extension carries it: a CreateTaskResult
// (resultType "task"), or a tasks/get result (resultType "complete", the
// detailed task: result when completed, inputRequests when input_required).
type extTask struct {
	ResultType     mcp.ResultType      `json:"resultType"`
	TaskID         string              `json:"taskId"`
	Status         mcp.TaskStatus      `json:"status"`
	StatusMessage  string              `json:"statusMessage,omitempty"`
	CreatedAt      string              `json:"createdAt"`
	LastUpdatedAt  string              `json:"lastUpdatedAt"`
	TTLMs          *int64              `json:"ttlMs"`
	PollIntervalMs *int64              `json:"pollIntervalMs,omitempty"`
	Result         *mcp.CallToolResult `json:"result,omitempty"`
	InputRequests  mcp.InputRequests   `json:"inputRequests,omitempty"`
	Meta           map[string]any      `json:"_meta,omitempty"`
}

// resultTypeTask marks a CreateTaskResult.
const resultTypeTask mcp.ResultType = "task"

// extTaskOf is the extension's form of a task and, when it has closed,
// its call's answer: an answer, isError or not, is a completed task (the
// extension keeps failed for JSON-RPC errors, which a closed wait never
// is); a cancelled wait is a cancelled task.
func (f *Front) extTaskOf(task mcp.Task, answer *mcp.CallToolResult, resultType mcp.ResultType) extTask {
	out := extTask{
		ResultType: resultType, TaskID: task.TaskId, Status: task.Status, StatusMessage: task.StatusMessage,
		CreatedAt: task.CreatedAt, LastUpdatedAt: task.LastUpdatedAt, TTLMs: task.TTL, PollIntervalMs: task.PollInterval,
		Meta: f.serverInfoMeta(),
	}
	if out.LastUpdatedAt == "" {
		out.LastUpdatedAt = out.CreatedAt
	}
	switch {
	case task.Status == mcp.TaskStatusCancelled:
		if answer != nil && out.StatusMessage == "" {
			out.StatusMessage = shorten(resultText(answer), 300)
		}
	case task.Status.IsTerminal() && answer != nil:
		out.Status, out.StatusMessage = mcp.TaskStatusCompleted, ""
		out.Result = f.complete(answer)
	case task.Status.IsTerminal():
		// Closed, but its answer could not be read with it (a
		// CreateTaskResult whose wait closed in between): the seed state,
		// working; tasks/get reads the answer.
		out.Status, out.StatusMessage = mcp.TaskStatusWorking, ""
	}
	return out
}

// complete marks a result as a 2026-07-28 result: resultType "complete",
// and the server named in _meta (as mcp-go marks the results it answers).
func (f *Front) complete(res *mcp.CallToolResult) *mcp.CallToolResult {
	out := *res
	out.ResultType = mcp.ResultTypeComplete
	meta := mcp.Meta{}
	if out.Meta != nil {
		meta = *out.Meta
	}
	if meta.AdditionalFields == nil {
		meta.AdditionalFields = map[string]any{}
	}
	for k, v := range f.serverInfoMeta() {
		meta.AdditionalFields[k] = v
	}
	out.Meta = &meta
	return &out
}

// serverInfoMeta is the _meta of durawait's own 2026-07-28 results.
func (f *Front) serverInfoMeta() map[string]any {
	return map[string]any{mcp.MetaKeyServerInfo: mcp.Implementation{Name: "durawait", Version: f.opts.Version}}
}

// ack is the empty acknowledgement of tasks/update and tasks/cancel.
func (f *Front) ack() map[string]any {
	return map[string]any{"resultType": mcp.ResultTypeComplete, "_meta": f.serverInfoMeta()}
}

// handleModern answers the requests of protocol 2026-07-28 that durawait
// serves itself: the extension's task methods, and the calls of its task
// tools by a client that declared the extension. handled is false for
// every other request (mcp-go answers it: a call of a client that did not
// declare the extension runs as a plain call).
func (f *Front) handleModern(ctx context.Context, msg mcpwire.Request) (resp any, handled bool) {
	switch method := mcp.MCPMethod(msg.Method); method {
	case mcp.MethodTasksResult, mcp.MethodTasksList:
		return mcpwire.ErrorResponse(msg.ID, mcp.METHOD_NOT_FOUND, msg.Method+": not a method of protocol "+mcp.ProtocolVersion20260728+
			" (its tasks extension, "+mcpwire.TasksExtension+", reads a task and its result with tasks/get)"), true
	case mcp.MethodTasksGet, mcp.MethodTasksCancel, "tasks/update":
		if !msg.Declares(mcpwire.TasksExtension) {
			return mcpwire.MissingExtensionResponse(msg.ID, mcpwire.TasksExtension, msg.Method+": the request does not declare the "+mcpwire.TasksExtension+
				" extension (params._meta[\""+mcp.MetaKeyClientCapabilities+"\"].extensions)"), true
		}
		var result any
		err := f.drained(ctx, func(ctx context.Context) (err error) {
			result, err = f.extTaskMethod(ctx, msg)
			return err
		})
		if err != nil {
			return mcpwire.ErrorResponse(msg.ID, rpcCode(err), msg.Method+": "+err.Error()), true
		}
		return mcpwire.ResultResponse(msg.ID, result), true
	case mcp.MethodToolsCall:
		if !msg.Declares(mcpwire.TasksExtension) {
			return nil, false
		}
		var req mcp.CallToolRequest
		if json.Unmarshal(msg.Params, &req.Params) != nil {
			return nil, false
		}
		req.Params.Task = nil // the 2025-11-25 augmentation means nothing here
		if !f.tools.of(req.Params.Name).task || f.mcp.GetTool(req.Params.Name) == nil {
			return nil, false // answered inline, as a plain call
		}
		if req.Params.Name == workflows.ToolWaitAgent && isFanIn(req) {
			// A task is of one invocation: a wait on several is a plain
			// call, within its window.
			return nil, false
		}
		return f.extToolCall(ctx, msg, req), true
	}
	return nil, false
}

// extToolCall runs a task tool's call for a client that declared the
// extension: the result when it is there within inlineWindow, else the
// task. Bad arguments get the tool's own isError result, as a plain call
// does.
func (f *Front) extToolCall(ctx context.Context, msg mcpwire.Request, req mcp.CallToolRequest) any {
	var task mcp.Task
	var answer *mcp.CallToolResult
	err := f.drained(withBlockerAnswers(ctx), func(ctx context.Context) (err error) {
		task, answer, err = f.taskCall(ctx, req, f.answerWithin(inlineWindow))
		return err
	})
	var bad paramsError
	switch {
	case errors.As(err, &bad):
		return mcpwire.ResultResponse(msg.ID, f.complete(mcp.NewToolResultError(bad.Error())))
	case err != nil:
		return mcpwire.ResultResponse(msg.ID, f.complete(mcp.NewToolResultError(err.Error())))
	}
	if ref, err := f.tools.parseTaskID(task.TaskId); err == nil && ref.updateID != "" {
		// A wait_agent task: blocked on a blocker that takes an answer,
		// it is a task (input_required) even when its wait ended at once.
		ext, _, err := f.extAgentTask(ctx, ref, resultTypeTask)
		switch {
		case err != nil:
			// The task exists: tasks/get reads it.
			return mcpwire.ResultResponse(msg.ID, f.extTaskOf(task, nil, resultTypeTask))
		case ext.Status == mcp.TaskStatusCompleted && ext.Result != nil:
			return mcpwire.ResultResponse(msg.ID, ext.Result)
		}
		ext.Result = nil
		return mcpwire.ResultResponse(msg.ID, ext)
	}
	if answer != nil {
		return mcpwire.ResultResponse(msg.ID, f.complete(answer))
	}
	return mcpwire.ResultResponse(msg.ID, f.extTaskOf(task, nil, resultTypeTask))
}

// answerWithin waits up to d for a new task's wait to end, and returns its
// answer if it did (nil: it runs on, and the call answers with the task).
func (f *Front) answerWithin(d time.Duration) func(ctx context.Context, task mcp.Task) *mcp.CallToolResult {
	return func(ctx context.Context, task mcp.Task) *mcp.CallToolResult {
		ref, err := f.tools.parseTaskID(task.TaskId)
		if err != nil {
			return nil
		}
		wctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		if ref.updateID != "" {
			// A wait_agent task: its state, which may ask for input, is
			// read once, by the caller (extAgentTask).
			if !task.Status.IsTerminal() {
				_ = f.opts.Temporal.GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions{
					WorkflowID: ref.workflowID, UpdateID: ref.updateID,
				}).Get(wctx, nil)
			}
			return nil
		}
		if !task.Status.IsTerminal() {
			_ = f.opts.Temporal.GetWorkflow(wctx, ref.workflowID, ref.runID).Get(wctx, nil)
		}
		now, answer, err := f.taskState(ctx, ref)
		if err != nil || !now.Status.IsTerminal() || answer == nil {
			return nil
		}
		return answer
	}
}

// extTaskMethod runs tasks/get, tasks/update or tasks/cancel for a client
// that declared the extension.
func (f *Front) extTaskMethod(ctx context.Context, msg mcpwire.Request) (any, error) {
	var params struct {
		TaskID         string                     `json:"taskId"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	if err := json.Unmarshal(msg.Params, &params); err != nil {
		return nil, badParams(fmt.Errorf("params: %w", err))
	}
	ref, err := f.tools.parseTaskID(params.TaskID)
	if err != nil {
		return nil, err
	}
	if !workflows.Owns(mcpwire.PrincipalFrom(ctx), ref.workflowID) {
		// Another principal's task reads exactly like an unknown one.
		return nil, taskLookupError(ref, &serviceerror.NotFound{})
	}
	if ref.updateID != "" && msg.Method != string(mcp.MethodTasksCancel) {
		// A wait_agent task, which may wait an answer.
		if msg.Method == string(mcp.MethodTasksGet) {
			ext, _, err := f.extAgentTask(ctx, ref, mcp.ResultTypeComplete)
			return ext, err
		}
		if params.InputResponses == nil {
			return nil, badParams(errors.New("inputResponses: required (an object of responses keyed as the task's inputRequests)"))
		}
		if err := f.answerAgentTask(ctx, ref, params.InputResponses); err != nil {
			return nil, err
		}
		return f.ack(), nil
	}
	task, answer, err := f.taskState(ctx, ref)
	if err != nil {
		return nil, err
	}
	switch msg.Method {
	case string(mcp.MethodTasksGet):
		return f.extTaskOf(task, answer, mcp.ResultTypeComplete), nil
	case string(mcp.MethodTasksCancel):
		if err := f.extCancel(ctx, ref, task); err != nil {
			return nil, err
		}
		return f.ack(), nil
	default: // tasks/update
		if params.InputResponses == nil {
			return nil, badParams(errors.New("inputResponses: required (an object of responses keyed as the task's inputRequests)"))
		}
		// A task with no outstanding input takes none: the responses are
		// ignored, as the extension asks of keys not outstanding.
		return f.ack(), nil
	}
}

// extCancel asks a running task's wait to stop. Cancellation is
// cooperative in the extension: a closed task is acknowledged as it is,
// and a wait_agent task (a wait on an agent invocation, which only
// cancel_agent stops) ends with its wait window; the agent runs on.
func (f *Front) extCancel(ctx context.Context, ref taskRef, task mcp.Task) error {
	if task.Status.IsTerminal() || strings.HasPrefix(ref.workflowID, workflows.AgentIDPrefix) {
		return nil
	}
	if err := f.opts.Temporal.CancelWorkflow(ctx, ref.workflowID, ref.runID); err != nil {
		return taskLookupError(ref, err)
	}
	return nil
}

// tasksExtension is what server/discover advertises of the extension (no
// settings: an empty object).
func tasksExtension() server.ServerOption {
	return server.WithExtensions(map[string]any{mcpwire.TasksExtension: map[string]any{}})
}
