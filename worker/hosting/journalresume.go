package hosting

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/workflows"
)

// confirmParallelism bounds the journaled loops confirmed with Temporal at
// once.
const confirmParallelism = 16

// loopStartOf is how a loop of ref starts: journaled when it is a loop of
// this worker's own host (an adopted host's loops go back to its owner,
// which resumes them from Temporal), unconfirmed when resumed from the
// journal.
func (r *Runtime) loopStartOf(ref loopRef, activity string, in any, fromJournal bool) loopStart {
	how := loopStart{unconfirmed: fromJournal}
	if r.loops.journal == nil || ref.Host != r.opts.Host {
		return how
	}
	input, err := json.Marshal(in)
	if err != nil {
		r.logger.Warn("could not journal a loop; a restart resumes it from Temporal instead", "workflow", ref.WorkflowID, "error", err)
		return how
	}
	how.journal = &journalEntry{WorkflowID: ref.WorkflowID, RunID: ref.RunID, ActivityID: ref.ActivityID, Activity: activity, Input: input}
	return how
}

// journalRecord journals what a probe loop of the own host recorded.
func (r *Runtime) journalRecord(ref loopRef, rec workflows.ProbeRecord) {
	if j := r.loops.journal; j != nil && ref.Host == r.opts.Host {
		if err := j.record(ref.key(), rec); err != nil {
			r.logger.Warn("could not journal a probe loop's record", "workflow", ref.WorkflowID, "error", err)
		}
	}
}

// resumeJournal resumes the own host's journaled loops that do not run
// here, at once and unconfirmed, then confirms them with Temporal
// (confirmJournal) while they run.
func (r *Runtime) resumeJournal() {
	j := r.loops.journal
	if j == nil {
		return
	}
	entries, err := j.entries()
	if err != nil {
		r.logger.Warn("could not read the loop journal; the host's loops are resumed from Temporal", "error", err)
		return
	}
	var resumed []journalEntry
	for _, e := range entries {
		ref := loopRef{WorkflowID: e.WorkflowID, RunID: e.RunID, ActivityID: e.ActivityID, Host: r.opts.Host}
		if r.loops.has(ref.key()) {
			continue
		}
		if err := r.startJournaled(ref, e); err != nil {
			r.logger.Error("cannot resume a journaled loop; its wait's loop is resumed from Temporal", "workflow", e.WorkflowID, "error", err)
			j.remove(ref.key())
			continue
		}
		resumed = append(resumed, e)
	}
	if len(resumed) > 0 {
		r.logger.Info("resumed the host's loops from its journal", "loops", len(resumed))
		r.wg.Go(func() { r.confirmJournal(r.ctx, resumed) })
	}
}

// startJournaled starts the loop of a journal entry.
func (r *Runtime) startJournaled(ref loopRef, e journalEntry) error {
	switch e.Activity {
	case workflows.PollProbeActivityName:
		var in workflows.PollInput
		if err := json.Unmarshal(e.Input, &in); err != nil {
			return fmt.Errorf("decode the probe loop's input: %w", err)
		}
		record := workflows.ProbeRecord{}
		if e.Record != nil {
			record = *e.Record
		}
		r.startProbe(r.ctx, ref, in, &record, true)
	case workflows.WatchPaneActivityName:
		var in workflows.WatchPaneInput
		if err := json.Unmarshal(e.Input, &in); err != nil {
			return fmt.Errorf("decode the pane watch's input: %w", err)
		}
		if !r.canWatch(in) {
			return fmt.Errorf("this worker no longer watches the panes of %q", in.TmuxQueue)
		}
		r.startWatch(r.ctx, ref, in, true)
	case workflows.RunAgentActivityName:
		var in workflows.RunAgentInput
		if err := json.Unmarshal(e.Input, &in); err != nil {
			return fmt.Errorf("decode the agent run's input: %w", err)
		}
		if !r.canFollow(in) {
			return fmt.Errorf("this worker can no longer follow provider %q", in.Spec.Provider)
		}
		r.startAgent(r.ctx, ref, activities.AgentRun{Input: in, Signalled: e.Signalled, Turns: e.Turns}, true)
	default:
		return fmt.Errorf("unknown loop activity %q", e.Activity)
	}
	return nil
}

// confirmJournal asks Temporal whether the activity of each loop resumed
// from the journal is still open, and tells the loop (loops.confirm),
// trying again until Temporal answers or ctx ends.
func (r *Runtime) confirmJournal(ctx context.Context, resumed []journalEntry) {
	sem := make(chan struct{}, confirmParallelism)
	var wg sync.WaitGroup
	for _, e := range resumed {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r.confirmLoop(ctx, e.key(), e.ActivityID)
		})
	}
	wg.Wait()
}

// confirmLoop asks Temporal whether the activity of a loop resumed from
// the journal is open, trying again until it answers or ctx ends, and
// tells the loop (loops.confirm). A loop whose cancel was requested while
// this host was down (cancel_agent, a cancelled wait) is stopped first: it
// answers cancelled, as a loop resumed from the history does.
func (r *Runtime) confirmLoop(ctx context.Context, key loopKey, activityID string) {
	delay := newRetryDelay()
	for {
		open, cancelRequested, err := r.activityOpen(ctx, key, activityID)
		if err == nil {
			if cancelRequested {
				r.loops.stop(key)
			}
			r.loops.confirm(key, open)
			return
		}
		r.logger.Warn("could not confirm a journaled loop; trying again", "workflow", key.workflowID, "error", err)
		if sleepCtx(ctx, delay.next()) != nil {
			return
		}
	}
}

// confirmNow confirms at once, on a goroutine of its own, a journaled
// loop that has its end (loops.confirmNow): its caller waits for it, ahead
// of the host's other journaled loops.
func (r *Runtime) confirmNow(ref loopRef) {
	if r.ctx.Err() != nil {
		return // stopping: the loop is dropped
	}
	// Not on r.wg: it may start while Stop waits, and it ends with r.ctx.
	go r.confirmLoop(r.ctx, ref.key(), ref.ActivityID)
}

// activityOpen reports whether a run still runs with the activity open,
// and whether its cancel was requested.
func (r *Runtime) activityOpen(ctx context.Context, key loopKey, activityID string) (open, cancelRequested bool, err error) {
	desc, err := r.opts.Client.DescribeWorkflowExecution(ctx, key.workflowID, key.runID)
	switch {
	case err != nil && gone(err):
		return false, false, nil
	case err != nil:
		return false, false, fmt.Errorf("describe %s: %w", key.workflowID, err)
	case desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return false, false, nil
	}
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetActivityId() == activityID {
			return true, pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED, nil
		}
	}
	return false, false, nil
}
