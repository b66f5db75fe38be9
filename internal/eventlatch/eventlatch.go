// Package eventlatch reaches an event's latch workflow
// (workflows.EventLatch) from outside it: a post (the front's post_event
// and hook endpoint) and a wait's subscription (the worker's
// SubscribeEvent activity). Both start the latch when none runs, with the
// same options.
package eventlatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/workflows"
)

// postAttempts is how often a post is tried when the latch it reached was
// ending (its last post had just expired): the next try starts a new run.
const postAttempts = 3

// StartOptions are the options a latch is started with: one per ID, a new
// run once the last has ended, shown with the event's owner, name and
// state.
func StartOptions(taskQueue string, latch workflows.EventLatchRef) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       latch.ID,
		TaskQueue:                taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowTaskTimeout:      workflows.TaskTimeout,
		StaticSummary:            workflows.EventLatchSummary(latch.Start),
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.KeyTool.ValueSet(workflows.ToolPostEvent),
			workflows.StartedRunning(),
			workflows.KeyTarget.ValueSet(latch.Start.Name),
			workflows.KeyCaller.ValueSet(workflows.KeywordValue(latch.Start.Caller)),
		),
	}
}

// Post posts to the event's latch, starting it when none runs, and returns
// what the post did once the latch has kept it.
func Post(ctx context.Context, c client.Client, taskQueue string, latch workflows.EventLatchRef, req workflows.EventPostRequest) (workflows.EventPostAnswer, error) {
	var (
		answer workflows.EventPostAnswer
		err    error
	)
	for attempt := 1; attempt <= postAttempts; attempt++ {
		answer, err = postOnce(ctx, c, taskQueue, latch, req)
		if err == nil || !latchEnded(err) || attempt == postAttempts {
			break
		}
		// The ending run closes within its last workflow task.
		select {
		case <-ctx.Done():
			return workflows.EventPostAnswer{}, fmt.Errorf("post to event %s: %w", latch.Start.Name, ctx.Err())
		case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
		}
	}
	if err != nil {
		return workflows.EventPostAnswer{}, fmt.Errorf("post to event %s: %w", latch.Start.Name, err)
	}
	return answer, nil
}

func postOnce(ctx context.Context, c client.Client, taskQueue string, latch workflows.EventLatchRef, req workflows.EventPostRequest) (workflows.EventPostAnswer, error) {
	start := c.NewWithStartWorkflowOperation(StartOptions(taskQueue, latch), workflows.EventLatchWorkflowName, latch.Start)
	handle, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			UpdateName:   workflows.EventPostUpdate,
			Args:         []any{req},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return workflows.EventPostAnswer{}, err
	}
	var answer workflows.EventPostAnswer
	err = handle.Get(ctx, &answer)
	return answer, err
}

// latchEnded reports whether err says the run the post reached ended
// before it took the post.
func latchEnded(err error) bool {
	var notFound *serviceerror.NotFound
	return errors.As(err, &notFound) || strings.Contains(err.Error(), "already completed")
}

// Subscribe subscribes a wait to the event's latch, starting it when none
// runs.
func Subscribe(ctx context.Context, c client.Client, taskQueue string, in workflows.EventSubscribeInput) error {
	opts := StartOptions(taskQueue, in.Latch)
	// Signal-with-start takes no conflict policy: it always signals a
	// running workflow.
	opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_UNSPECIFIED
	if _, err := c.SignalWithStartWorkflow(ctx, in.Latch.ID, workflows.EventSubscribeSignal, in.Subscription, opts,
		workflows.EventLatchWorkflowName, in.Latch.Start); err != nil {
		return fmt.Errorf("subscribe %s to event %s: %w", in.Subscription.WaitID, in.Latch.Start.Name, err)
	}
	return nil
}
