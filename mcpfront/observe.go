package mcpfront

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

// What operators see of a call in the Temporal UI: the search attributes a
// workflow starts with (the workflows upsert their state as they move; see
// workflows/searchattrs.go), and the structured answer a caller gets when an
// operator cancelled its wait.

// client is the name/version of the client making req: from its _meta
// (protocol 2026-07-28), else from its session's initialize.
func (f *Front) client(ctx context.Context, req *mcp.CallToolRequest) string {
	if req != nil && req.Params.Meta != nil {
		if info := req.Params.Meta.ClientInfo(); info != nil && info.Name != "" {
			return clientName(*info)
		}
	}
	if s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		if name := clientName(s.GetClientInfo()); name != "" {
			return name
		}
	}
	// The names are kept by mcp-go's session ID: the transport's session,
	// or stdio's own ("stdio").
	sid := sessionOf(ctx)
	if s := server.ClientSessionFromContext(ctx); sid == "" && s != nil {
		sid = mcpwire.SessionOf(s.SessionID())
	}
	if sid != "" {
		if name, ok := f.clients.m.Load(sid); ok {
			return name.(string)
		}
	}
	return ""
}

// startAttributes are the search attributes a workflow of tool starts with:
// the tool, the caller, and the client and session when known, plus more.
func (f *Front) startAttributes(ctx context.Context, req *mcp.CallToolRequest, tool string, more ...temporal.SearchAttributeUpdate) temporal.SearchAttributes {
	updates := append(callerAttributes(ctx, tool), more...)
	if name := f.client(ctx, req); name != "" {
		updates = append(updates, workflows.KeyClient.ValueSet(workflows.KeywordValue(name)))
	}
	return temporal.NewSearchAttributes(updates...)
}

// isCanceled reports whether a workflow's result error says it was
// cancelled.
func isCanceled(err error) bool {
	var canceled *temporal.CanceledError
	return errors.As(err, &canceled)
}

// cancellationTimeout bounds the read of who cancelled.
const cancellationTimeout = 5 * time.Second

// cancellation reads who cancelled a workflow run, and how long it ran
// until then, from its history.
func (f *Front) cancellation(ctx context.Context, id, runID string) (workflows.Cancellation, time.Duration) {
	r := f.readCancel(ctx, id, runID)
	return r.cancellation, r.ran
}

// cancelRead is what a run's history says of its cancellation.
type cancelRead struct {
	// cancellation is who cancelled the run, and when and why ("unknown"
	// when the history does not say).
	cancellation workflows.Cancellation
	// ran is how long the run ran until the cancel request.
	ran time.Duration
	// requested says the history holds a cancel request at all (an agent
	// stopped by cancel_agent has none).
	requested bool
	// input is the run's start input, for the answer that repeats one of
	// its arguments (wait_for's effective_max_wait_sec).
	input *commonpb.Payloads
}

// readCancel reads a run's cancellation from its history.
func (f *Front) readCancel(ctx context.Context, id, runID string) cancelRead {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancellationTimeout)
	defer cancel()
	r := cancelRead{cancellation: workflows.Cancellation{By: "unknown"}}
	var started time.Time
	iter := f.opts.Temporal.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			f.opts.Logger.Warn("read who cancelled a wait", "workflow_id", id, "error", err)
			break
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			started = ev.GetEventTime().AsTime()
			r.input = ev.GetWorkflowExecutionStartedEventAttributes().GetInput()
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
			r.requested = true
			a := ev.GetWorkflowExecutionCancelRequestedEventAttributes()
			if a.GetIdentity() != "" {
				r.cancellation.By = a.GetIdentity()
			}
			r.cancellation.Cause = a.GetCause()
			at := ev.GetEventTime().AsTime()
			r.cancellation.At = at.UTC().Format(time.RFC3339Nano)
			if !started.IsZero() {
				r.ran = at.Sub(started)
			}
		}
	}
	return r
}

// cancelledWaitFor is wait_for's answer when an operator cancelled the
// wait. It validates against wait_for's output schema: reason "failed"
// without a condition (fail_matches sets one), the fields the schema
// requires, and a "cancelled" object saying who and why; isError is set, so
// a caller does not read it as its condition. maxWaitSec is the wait's
// max_wait_sec when the caller knows it (a call that parsed it), or 0: then
// it is read from the run's start in the history.
func (f *Front) cancelledWaitFor(ctx context.Context, id, runID string, maxWaitSec int) *mcp.CallToolResult {
	r := f.readCancel(ctx, id, runID)
	c := r.cancellation
	if maxWaitSec == 0 && r.input != nil {
		var in workflows.WaitForInput
		if err := converter.GetDefaultDataConverter().FromPayloads(r.input, &in); err != nil {
			f.opts.Logger.Warn("decode a cancelled wait's input", "workflow_id", id, "error", err)
		}
		maxWaitSec = in.Spec.MaxWaitSec
	}
	res := structuredResult(map[string]any{
		"reason":                 workflows.WaitReasonFailed,
		"last_observation":       "",
		"elapsed_sec":            r.ran.Seconds(),
		"samples":                0,
		"effective_max_wait_sec": maxWaitSec,
		"cancelled":              c,
	})
	res.IsError = true
	res.Content = []mcp.Content{mcp.NewTextContent(fmt.Sprintf("wait_for: the wait was %s; it did not reach its condition. Call again to start a new wait.", c))}
	return res
}

// cancelledText is wait_for_text's answer when an operator cancelled the
// wait: its error variant with code "cancelled", plus who and why.
func (f *Front) cancelledText(ctx context.Context, id, runID string) *mcp.CallToolResult {
	c, _ := f.cancellation(ctx, id, runID)
	res := structuredResult(map[string]any{
		"error": workflows.TextWaitError{Code: workflows.TextErrCancelled, Effects: "none", Retryable: false,
			Message: "the wait was " + c.String()},
		"cancelled": c,
	})
	res.IsError = true
	return res
}

// cancelledInvocation is the payload of an invocation an operator cancelled
// through Temporal (not cancel_agent): the payload the workflow left in the
// cancellation's details (its output so far), else a bare one; status
// cancelled, reason finished, and an error naming who cancelled.
func (f *Front) cancelledInvocation(ctx context.Context, id string, err error) workflows.InvocationPayload {
	c, ran := f.cancellation(ctx, id, "")
	p := workflows.InvocationPayload{InvocationID: id, ElapsedMs: ran.Milliseconds()}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) && canceled.HasDetails() {
		_ = canceled.Details(&p)
	}
	p.InvocationID, p.Status, p.Reason = id, workflows.AgentCancelled, workflows.AgentReasonFinished
	p.Error = &workflows.AgentError{Code: workflows.ErrCodeCancelled, Message: "the invocation was " + c.String()}
	return p
}

// namedCanceller adds who cancelled to the payload of an invocation an
// operator cancelled through Temporal; any other payload is returned as it
// is (cancel_agent's cancel is the caller's own and names no one).
func (f *Front) namedCanceller(ctx context.Context, p workflows.InvocationPayload) workflows.InvocationPayload {
	if p.Status != workflows.AgentCancelled || p.Error != nil {
		return p
	}
	if r := f.readCancel(ctx, p.InvocationID, ""); r.requested {
		p.Error = &workflows.AgentError{Code: workflows.ErrCodeCancelled, Message: "the invocation was " + r.cancellation.String()}
	}
	return p
}
