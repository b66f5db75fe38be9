package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	updatepb "go.temporal.io/api/update/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

// Agent blockers as input requests (the tasks extension of 2026-07-28). A
// wait_agent task whose wait ends on a blocker the agent's provider can
// resume is input_required, with one elicitation (keyed "blocker-<code>")
// stating the blocker; the answer given with tasks/update is sent as the
// invocation's answer update, which resumes the agent's session with it
// and waits a window again. The task follows a chain of updates, all named
// from its own: its wait update, then each answer's update
// (answerUpdateID). So any front end reads the task's state from Temporal
// alone, across restarts: input_required while the blocker's answer update
// does not exist, then the answer update's outcome, and so on. A blocker
// that cannot be answered (its provider has no resume template), or one
// declined, completes the task with the blocked payload, as a 2025-11-25
// task does.

// blockerAnswersKey marks a call's context: its caller answers blockers
// (it declared the tasks extension), so its wait_agent task's wait is
// woken by a blocker waiting for an answer, though that blocker woke
// another wait before.
type blockerAnswersKey struct{}

// withBlockerAnswers marks ctx's caller as one that answers blockers.
func withBlockerAnswers(ctx context.Context) context.Context {
	return context.WithValue(ctx, blockerAnswersKey{}, true)
}

// answersBlockers reports whether ctx's caller answers blockers.
func answersBlockers(ctx context.Context) bool {
	v, _ := ctx.Value(blockerAnswersKey{}).(bool)
	return v
}

// maxAnswerChain bounds the updates one task follows: an answer starts a
// turn, and each turn wakes at most once per blocker category.
const maxAnswerChain = 64

// blockerInputPrefix starts the inputRequests key of a blocker.
const blockerInputPrefix = "blocker-"

// answerUpdateID names the answer update of the task whose wait update is
// taskUpdate to the blocker key (workflows.AgentBlocker.Key, unique in its
// invocation): bounded, and the same from any front end.
func answerUpdateID(taskUpdate, key string) string { return taskUpdate + "/answer-" + key }

// blockerInputKey is the inputRequests key of the blocker key: its turn
// in it, so an answer meant for one turn never answers the next.
func blockerInputKey(key string) string {
	return blockerInputPrefix + strings.ReplaceAll(key, "@", "-")
}

// outstandingBlocker is a blocker a wait_agent task waits an answer for.
type outstandingBlocker struct {
	code, message, blockerKey string
	// key is its inputRequests key; updateID names the answer update.
	key, updateID string
}

// updatePollWait bounds one read of an update: an update admitted and not
// yet accepted (its workflow task is being run) would hold the read for
// the engine's long poll; it reads as running.
const updatePollWait = 5 * time.Second

// agentUpdateOutcome reads the outcome of an update of a wait_agent task:
// found false when no update has the ID; outcome nil while it runs.
func (f *Front) agentUpdateOutcome(ctx context.Context, workflowID, updateID string) (outcome *updatepb.Outcome, found bool, err error) {
	pctx, cancel := context.WithTimeout(ctx, updatePollWait)
	defer cancel()
	resp, err := f.opts.Temporal.WorkflowService().PollWorkflowExecutionUpdate(pctx, &workflowservice.PollWorkflowExecutionUpdateRequest{
		Namespace: f.opts.Namespace,
		UpdateRef: &updatepb.UpdateRef{
			WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: workflowID},
			UpdateId:          updateID,
		},
		WaitPolicy: &updatepb.WaitPolicy{LifecycleStage: enumspb.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED},
	})
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return nil, false, nil
	case err != nil && pctx.Err() != nil && ctx.Err() == nil:
		return nil, true, nil // admitted, not yet accepted
	case err != nil:
		return nil, false, err
	}
	return resp.GetOutcome(), true, nil
}

// agentUpdate reads an update of a wait_agent task: running while it has
// no outcome; else its answer, or perr, the update's own failure (or a
// result that cannot be read). err is a failure to look it up; an unknown
// update reads as an unknown task.
func (f *Front) agentUpdate(ctx context.Context, ref taskRef, updateID string) (w workflows.AgentWaitAnswer, running bool, perr, err error) {
	outcome, found, err := f.agentUpdateOutcome(ctx, ref.workflowID, updateID)
	switch {
	case err != nil:
		return w, false, nil, taskLookupError(ref, err)
	case !found:
		return w, false, nil, taskLookupError(ref, &serviceerror.NotFound{Message: "update " + updateID + " not found"})
	case outcome == nil:
		return w, true, nil, nil
	}
	if failure := outcome.GetFailure(); failure != nil {
		return w, false, errors.New(failure.GetMessage()), nil
	}
	return w, false, converter.GetDefaultDataConverter().FromPayloads(outcome.GetSuccess(), &w), nil
}

// extAgentTask is a wait_agent task's state as the extension carries it,
// following its chain of updates; and the blocker it waits an answer for,
// when input_required.
func (f *Front) extAgentTask(ctx context.Context, ref taskRef, resultType mcp.ResultType) (extTask, *outstandingBlocker, error) {
	created := agentTaskCreated(ref.updateID)
	task := newTask(ref, created, created, f.taskTTL(ctx))
	upd := ref.updateID
	for range maxAnswerChain {
		w, running, perr, err := f.agentUpdate(ctx, ref, upd)
		switch {
		case err != nil:
			return extTask{}, nil, err
		case running:
			return f.extTaskOf(task, nil, resultType), nil, nil
		}
		task.LastUpdatedAt = time.Now().UTC().Format(time.RFC3339Nano)
		if perr == nil && w.Answerable && w.Error != nil {
			next := answerUpdateID(ref.updateID, w.BlockerKey)
			_, answered, err := f.agentUpdateOutcome(ctx, ref.workflowID, next)
			if err != nil {
				return extTask{}, nil, taskLookupError(ref, err)
			}
			if answered {
				upd = next
				continue
			}
			if f.blockerWaits(ctx, ref.workflowID, w.BlockerKey) {
				b := &outstandingBlocker{code: w.Error.Code, message: w.Error.Message, blockerKey: w.BlockerKey,
					key: blockerInputKey(w.BlockerKey), updateID: next}
				out := f.extTaskOf(task, nil, resultType)
				out.Status = mcp.TaskStatusInputRequired
				out.StatusMessage = "the agent is blocked (" + b.code + "): " + shorten(b.message, 300)
				out.InputRequests = mcp.InputRequests{b.key: blockerElicitation(ref.workflowID, b)}
				return out, b, nil
			}
			// Answered or declined through another task, or the
			// invocation ended: the task ends with where it stands.
			return f.extAgentTaskEnded(ctx, ref, task, resultType)
		}
		answer := f.agentAnswer(ctx, ref.workflowID, w.InvocationPayload, perr)
		setTerminal(&task, answer)
		out := f.extTaskOf(task, answer, resultType)
		if perr == nil && w.Reason == workflows.AgentReasonExecutionBlocked && w.Error != nil {
			// Why no input is asked for.
			out.StatusMessage = "the " + w.Error.Code + " blocker takes no answer here (only a permission or a question does, when the agent's provider " +
				"has a resume template and its CLI named its session; or it was declined): call wait_agent to go on waiting, or cancel_agent"
		}
		return out, nil, nil
	}
	return extTask{}, nil, fmt.Errorf("task %s: more than %d answers", ref, maxAnswerChain)
}

// blockerWaits reports whether the invocation still waits for an answer
// to the blocker key: not once it has closed, nor once another task
// answered or declined it. When its worker cannot say (none is up), it is
// taken as waiting.
func (f *Front) blockerWaits(ctx context.Context, workflowID, key string) bool {
	desc, err := f.opts.Temporal.DescribeWorkflowExecution(ctx, workflowID, "")
	if err == nil && desc.WorkflowExecutionInfo.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return false
	}
	qctx, cancel := context.WithTimeout(ctx, answerableQueryWait)
	defer cancel()
	v, err := f.opts.Temporal.QueryWorkflow(qctx, workflowID, "", workflows.AgentAnswerableQuery)
	if err != nil {
		return true
	}
	var keys []string
	if v.Get(&keys) != nil {
		return true
	}
	return slices.Contains(keys, key)
}

// answerableQueryWait bounds the query of what an invocation waits an
// answer for.
const answerableQueryWait = 3 * time.Second

// extAgentTaskEnded completes a wait_agent task whose blocker no longer
// waits for an answer: with the invocation's final payload once it has
// closed, else with where it stands now.
func (f *Front) extAgentTaskEnded(ctx context.Context, ref taskRef, task mcp.Task, resultType mcp.ResultType) (extTask, *outstandingBlocker, error) {
	var answer *mcp.CallToolResult
	final, err := f.finalPayload(ctx, ref.workflowID)
	switch {
	case err == nil:
		answer = structuredResult(f.namedCanceller(ctx, final))
	default:
		v, qerr := f.opts.Temporal.QueryWorkflow(ctx, ref.workflowID, "", workflows.AgentStateQuery)
		var now workflows.InvocationPayload
		if qerr == nil {
			qerr = v.Get(&now)
		}
		if qerr != nil {
			return extTask{}, nil, fmt.Errorf("task %s: the invocation's state could not be read: %v", ref, qerr)
		}
		answer = structuredResult(now)
	}
	setTerminal(&task, answer)
	out := f.extTaskOf(task, answer, resultType)
	out.StatusMessage = "the blocker was answered or declined elsewhere, or the invocation ended before an answer"
	return out, nil, nil
}

// blockerElicitation is the input request of a blocker: a form asking for
// the answer the agent's session is resumed with.
func blockerElicitation(invocationID string, b *outstandingBlocker) mcp.InputRequest {
	return mcp.NewElicitationInputRequest(mcp.ElicitationParams{
		Mode: mcp.ElicitationModeForm,
		Message: fmt.Sprintf("The agent of invocation %s is blocked (%s): %s\n"+
			"Answer it to resume its session with your answer as its next prompt (for a permission: grant it, or say what to do instead); "+
			"decline to leave it as it is.", invocationID, b.code, b.message),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"answer": map[string]any{
					"type":        "string",
					"title":       "Answer",
					"description": "What the agent is told when its session resumes.",
					"minLength":   1,
				},
			},
			"required": []string{"answer"},
		},
	})
}

// answerAgentTask takes tasks/update's responses for a wait_agent task:
// the response to its outstanding blocker, if any, is sent as the answer
// update, until the invocation accepts or refuses it (refused: a -32602
// naming the rule it broke). Responses to keys not outstanding are
// ignored, as the extension asks.
func (f *Front) answerAgentTask(ctx context.Context, ref taskRef, responses map[string]json.RawMessage) error {
	_, b, err := f.extAgentTask(ctx, ref, mcp.ResultTypeComplete)
	if err != nil || b == nil {
		return err
	}
	raw, ok := responses[b.key]
	if !ok {
		return nil
	}
	req, err := answerRequest(b, raw)
	if err != nil {
		return badParams(err)
	}
	req.Principal, req.Window, req.Key = mcpwire.PrincipalFrom(ctx), f.opts.Agents.WaitWindow, b.blockerKey
	actx, cancel := context.WithTimeout(ctx, agentTaskAcceptWait)
	defer cancel()
	until, _ := actx.Deadline()
	err = f.retryAgentWait(actx, ref.workflowID, until, func() error {
		h, err := f.opts.Temporal.UpdateWorkflow(actx, client.UpdateWorkflowOptions{
			WorkflowID:   ref.workflowID,
			UpdateID:     b.updateID,
			UpdateName:   workflows.AgentAnswerUpdate,
			Args:         []any{req},
			WaitForStage: client.WorkflowUpdateStageAccepted,
		})
		if err != nil {
			return err
		}
		// A refused update comes back as a handle holding the refusal,
		// which Get returns at once; an accepted one is still running,
		// and Get on a done context returns without waiting for it.
		done, cancel := context.WithCancel(actx)
		cancel()
		if err := h.Get(done, nil); isRefusal(err) {
			return err
		}
		return nil
	})
	switch {
	case err == nil:
		return nil
	case isRefusal(err):
		return badParams(fmt.Errorf("inputResponses[%q]: the answer was refused: %s", b.key, workflowErrorMessage(err)))
	}
	if desc, derr := f.opts.Temporal.DescribeWorkflowExecution(ctx, ref.workflowID, ""); derr == nil &&
		desc.WorkflowExecutionInfo.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return badParams(fmt.Errorf("inputResponses[%q]: invocation %s has ended; no answer is taken", b.key, ref.workflowID))
	}
	return fmt.Errorf("inputResponses[%q]: the answer could not be delivered (send it again: it is taken once): %s", b.key, workflowErrorMessage(err))
}

// isRefusal reports whether err is the invocation's refusal of an answer
// (its validator's error, naming the rule).
func isRefusal(err error) bool {
	var refused *temporal.ApplicationError
	return errors.As(err, &refused)
}

// answerRequest reads an elicitation response to blocker b: accept with
// content.answer, or decline / cancel.
func answerRequest(b *outstandingBlocker, raw json.RawMessage) (workflows.AgentAnswerRequest, error) {
	var resp struct {
		Action  mcp.ElicitationResponseAction `json:"action"`
		Content map[string]any                `json:"content"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return workflows.AgentAnswerRequest{}, fmt.Errorf("inputResponses[%q]: not an elicitation result: %w", b.key, err)
	}
	switch resp.Action {
	case mcp.ElicitationResponseActionDecline, mcp.ElicitationResponseActionCancel:
		return workflows.AgentAnswerRequest{Code: b.code, Decline: true}, nil
	case mcp.ElicitationResponseActionAccept:
	default:
		return workflows.AgentAnswerRequest{}, fmt.Errorf("inputResponses[%q].action: %q is not accept, decline or cancel", b.key, resp.Action)
	}
	answer, _ := resp.Content["answer"].(string)
	if strings.TrimSpace(answer) == "" {
		return workflows.AgentAnswerRequest{}, fmt.Errorf("inputResponses[%q].content.answer: required, a non-empty string (what the agent is told)", b.key)
	}
	return workflows.AgentAnswerRequest{Code: b.code, Answer: answer}, nil
}
