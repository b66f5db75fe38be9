package mcpfront

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.temporal.io/sdk/converter"

	"github.com/durawait/durawait/internal/eventlatch"
	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

var (
	//go:embed schemas/wait_for_event.input.json
	waitForEventInputSchema []byte
	//go:embed schemas/wait_for_event.output.json
	waitForEventOutputSchema []byte
	//go:embed schemas/post_event.input.json
	postEventInputSchema []byte
	//go:embed schemas/post_event.output.json
	postEventOutputSchema []byte
)

const waitForEventDescription = `Wait for a post of an event: another agent's post_event, or a system's POST /hooks/{name} (a CI callback, an approval). Returns the post's payload the moment it is posted.
A post made before the wait is kept for the operator's retention, so "post, then wait" answers at once too; each post has a seq: pass the seq you got as after_seq to wait for the next one. match (RE2) filters posts by their payload as compact JSON.
max_wait_sec (default 120) is clamped to 300; timeout is a normal result: call again with the same arguments to attach to the same wait (elapsed_sec counts from the first call).`

const postEventDescription = `Post to an event: every wait_for_event waiting on it (and matching it) ends at once with the payload, and the post is kept for the operator's retention for waits that come later. Events are your own unless the operator shares their names. Give a delivery_id to make a retry safe: the same delivery_id posts once.`

// EventOptions configure the events (wait_for_event, post_event, the hook
// endpoint).
type EventOptions struct {
	// Retention is how long a post is kept (workflows.DefaultEventRetention
	// when zero).
	Retention time.Duration
	// Shared are the patterns (path.Match) of the event names every
	// principal shares; any other event is its poster's own.
	Shared []string
}

// retention is the posts' retention.
func (o EventOptions) retention() time.Duration {
	if o.Retention > 0 {
		return o.Retention
	}
	return workflows.DefaultEventRetention
}

// shared reports whether the event called name is shared by every
// principal.
func (o EventOptions) shared(name string) bool {
	for _, p := range o.Shared {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// latchOf is the latch of the event called name as principal reaches it.
func (f *Front) latchOf(principal, name string) workflows.EventLatchRef {
	shared := f.opts.EventOptions.shared(name)
	caller := workflows.CallerValue(principal)
	if shared {
		caller = workflows.SharedEventTag
	}
	return workflows.EventLatchRef{
		ID:    workflows.EventLatchID(principal, name, shared),
		Start: workflows.EventLatchInput{Name: name, Caller: caller, Retention: f.opts.EventOptions.retention()},
	}
}

func (f *Front) handleWaitForEvent(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	w, bad := f.prepareWaitForEvent(ctx, req)
	if bad != nil {
		return bad, nil
	}
	// The start/attach/settle dance is described at sharedWait.
	run, events, unsubscribe, err := f.startOrAttach(ctx, w)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return startFailed(workflows.ToolWaitForEvent, err), nil
	}
	defer unsubscribe()
	spec := w.input.(workflows.WaitForEventInput).Spec
	token := progressToken(req)
	f.reportProgress(ctx, token, 0, 1, "waiting for a post of event "+spec.Name)
	var result workflows.EventWaitResult
	// Bound 0: Temporal's answer is long-polled from the start (a post
	// this front did not take ends the wait with no event here), and a
	// post this front takes answers at once through the feed.
	err = f.awaitOutcome(ctx, run, events, 0, &result, func(ev workflows.WaitEvent) bool {
		if e, ok := ev.(workflows.EventAnswered); ok {
			result = workflows.NewEventWaitResult(spec, &e.Post, e.Started, e.Post.PostedAt)
			return true
		}
		return false
	})
	if err != nil && ctx.Err() != nil {
		// The caller went away; the wait runs on to its own bound.
		return nil, ctx.Err()
	}
	if isCanceled(err) {
		return f.cancelledEventWait(ctx, run.GetID(), run.GetRunID()), nil
	}
	return eventWaitAnswer(result, err), nil
}

// prepareWaitForEvent parses a wait_for_event call into the wait it starts
// or attaches to (the caller's own: the principal is part of its ID); a
// non-nil result is the call's answer (bad arguments).
func (f *Front) prepareWaitForEvent(ctx context.Context, req mcp.CallToolRequest) (sharedWait, *mcp.CallToolResult) {
	spec, err := workflows.ParseWaitForEvent(rawArgs(req))
	if err != nil {
		return sharedWait{}, mcp.NewToolResultError("wait_for_event: " + err.Error())
	}
	noteAttributes(ctx, attrEventName.String(spec.Name))
	noteTarget(ctx, spec.Name)
	principal := mcpwire.PrincipalFrom(ctx)
	latch := f.latchOf(principal, spec.Name)
	return sharedWait{
		id:      spec.WorkflowID(latch.ID, principal),
		summary: workflows.EventWaitSummary(spec),
		details: workflows.EventWaitDetails(spec),
		memo:    principalMemo(workflows.EventWaitMemo(spec), principal),
		attrs: f.startAttributes(ctx, &req, workflows.ToolWaitForEvent, workflows.StartedRunning(),
			workflows.KeyTarget.ValueSet(spec.Name)),
		workflow:   workflows.WaitForEventWorkflowName,
		input:      workflows.WaitForEventInput{Spec: spec, Latch: latch},
		pollMs:     1000,
		bound:      spec.MaxWait(),
		maxWaitSec: spec.MaxWaitSec,
		feed:       f.posts,
		noLoop:     true,
	}, nil
}

// eventWaitAnswer is wait_for_event's answer for a closed wait.
func eventWaitAnswer(result workflows.EventWaitResult, err error) *mcp.CallToolResult {
	if err != nil {
		return mcp.NewToolResultError("wait_for_event: " + workflowErrorMessage(err))
	}
	return structuredResult(result)
}

// eventRunAnswer is wait_for_event's answer from its run ref (a task's
// result).
func (f *Front) eventRunAnswer(ctx context.Context, ref taskRef) *mcp.CallToolResult {
	var result workflows.EventWaitResult
	err := getResult(ctx, f.opts.Temporal.GetWorkflow(ctx, ref.workflowID, ref.runID), &result)
	if isCanceled(err) {
		return f.cancelledEventWait(ctx, ref.workflowID, ref.runID)
	}
	return eventWaitAnswer(result, err)
}

// cancelledEventWait is wait_for_event's answer when an operator cancelled
// the wait: reason cancelled, who and why, as an error.
func (f *Front) cancelledEventWait(ctx context.Context, id, runID string) *mcp.CallToolResult {
	r := f.readCancel(ctx, id, runID)
	var in workflows.WaitForEventInput
	if r.input != nil {
		if err := converter.GetDefaultDataConverter().FromPayloads(r.input, &in); err != nil {
			f.opts.Logger.Warn("decode a cancelled wait's input", "workflow_id", id, "error", err)
		}
	}
	c := r.cancellation
	res := structuredResult(workflows.EventWaitResult{
		Reason: workflows.EventReasonCancelled, Name: in.Spec.Name, ElapsedSec: r.ran.Seconds(),
		EffectiveMaxWaitSec: in.Spec.MaxWaitSec, Cancelled: &c,
	})
	res.IsError = true
	res.Content = []mcp.Content{mcp.NewTextContent(fmt.Sprintf("wait_for_event: the wait was %s. Call again to start a new wait.", c))}
	return res
}

// PostAnswer is post_event's answer (and the hook endpoint's).
type PostAnswer struct {
	Name        string    `json:"name"`
	Seq         int64     `json:"seq"`
	PostedAt    time.Time `json:"posted_at"`
	Duplicate   bool      `json:"duplicate"`
	Answered    int       `json:"answered"`
	Woken       int       `json:"woken"`
	RetainedSec int64     `json:"retained_sec"`
}

func (f *Front) handlePostEvent(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	spec, err := workflows.ParsePostEvent(rawArgs(req))
	if err != nil {
		return mcp.NewToolResultError("post_event: " + err.Error()), nil
	}
	noteAttributes(ctx, attrEventName.String(spec.Name))
	noteTarget(ctx, spec.Name)
	answer, err := f.Post(ctx, mcpwire.PrincipalFrom(ctx), spec.Name, workflows.EventPostRequest{
		Payload: spec.Payload, Source: workflows.EventSourceMCP, DeliveryID: spec.DeliveryID,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		hint := "; call again with the same delivery_id: it posts once"
		if spec.DeliveryID == "" {
			hint = "; the post may or may not be kept: give a delivery_id to make a retry post once"
		}
		return mcp.NewToolResultError("post_event: " + workflowErrorMessage(err) + hint), nil
	}
	return structuredResult(answer), nil
}

// Post posts to the event called name as principal (its own event, or a
// shared one) and tells the waits of this process it ended at once. The
// hook endpoint posts through it too.
func (f *Front) Post(ctx context.Context, principal, name string, req workflows.EventPostRequest) (PostAnswer, error) {
	if rule := workflows.CheckEventName(name); rule != "" {
		return PostAnswer{}, errors.New("name: " + rule)
	}
	latch := f.latchOf(principal, name)
	req.Retention = latch.Start.Retention
	answer, err := eventlatch.Post(ctx, f.opts.Temporal, f.opts.TaskQueue, latch, req)
	if err != nil {
		return PostAnswer{}, err
	}
	for _, w := range answer.Answered {
		f.posts.Observe(w.WaitID, workflows.EventAnswered{Post: answer.Post, Started: w.Started})
	}
	return PostAnswer{
		Name: name, Seq: answer.Post.Seq, PostedAt: answer.Post.PostedAt, Duplicate: answer.Duplicate,
		Answered: len(answer.Answered), Woken: answer.Woken, RetainedSec: int64(latch.Start.Retention / time.Second),
	}, nil
}

// eventWaitResultAttributes are a wait_for_event's span attributes and
// outcome, from its answer.
func eventWaitResultAttributes(structured any) ([]attribute.KeyValue, string) {
	var result workflows.EventWaitResult
	if !asResult(structured, &result) || result.Reason == "" {
		return nil, ""
	}
	attrs := []attribute.KeyValue{attrStopReason.String(result.Reason), attrElapsedMs.Int64(int64(result.ElapsedSec*1000 + 0.5))}
	if result.Event != nil {
		attrs = append(attrs, attrEventSeq.Int64(result.Event.Seq))
	}
	return attrs, result.Reason
}

// postResultAttributes are a post_event's span attributes and outcome.
func postResultAttributes(structured any) ([]attribute.KeyValue, string) {
	var answer PostAnswer
	if !asResult(structured, &answer) || answer.Name == "" {
		return nil, ""
	}
	attrs := []attribute.KeyValue{attrEventSeq.Int64(answer.Seq), attrAnswered.Int(answer.Answered)}
	if answer.Duplicate {
		return attrs, "duplicate"
	}
	return attrs, "posted"
}
