package hosting

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/workflows"
)

// resumeParallelism bounds the waits a sweep reads from Temporal at once.
const resumeParallelism = 8

// sweep looks up the running waits of a host (DurawaitHost) and makes
// this worker's loops match them: a wait whose loop does not run here is
// resumed (the first sweep is the resume of a restarted or adopted host),
// and a loop whose wait no longer runs is stopped (its stop did not reach
// it: the wait was terminated, or timed out while its host was down; an
// agent's CLI then stops with its invocation). Only a loop scheduled
// before this worker began to poll the host's queue is resumed at once: a
// later one reaches it through the queue. The own host's sweep also looks
// up, in Temporal directly, the waits its journal expects a loop of that
// visibility does not list yet (loopJournal.expect). It reports whether
// it could list the host's waits and resume every one it had to.
func (r *Runtime) sweep(ctx context.Context, t sweepTarget) bool {
	host := t.host
	running, err := r.runningWaits(ctx, host)
	if err != nil {
		if ctx.Err() == nil {
			r.logger.Warn("could not look up a host's waits; trying again", "of", host, "error", err)
		}
		return false
	}
	seen := map[loopKey]bool{}
	var look []loopKey
	for _, e := range running {
		key := loopKey{e.GetWorkflowId(), e.GetRunId()}
		seen[key] = true
		if !r.loops.has(key) {
			look = append(look, key)
		}
	}
	expected := map[loopKey]bool{}
	if t.own {
		for _, key := range r.expectedUnlisted(seen) {
			expected[key] = true
			look = append(look, key)
		}
	}
	sem := make(chan struct{}, resumeParallelism)
	var wg sync.WaitGroup
	var resumed, failed atomic.Int32
	for _, key := range look {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			how, err := r.resume(ctx, host, key, t.since)
			var bad undecodable
			switch {
			case err == nil && how == resumeStarted:
				resumed.Add(1)
			case err == nil && expected[key] && (how == resumeElsewhere || how == resumeNone && r.closed(ctx, key)),
				err != nil && expected[key] && gone(err):
				r.loops.journal.unexpect(key) // not this host's loop, its run ended, or Temporal has none
			case err == nil || ctx.Err() != nil:
			case errors.As(err, &bad):
				r.logger.Error("cannot resume a wait's loop: its input is unreadable", "workflow", key.workflowID, "error", err)
			default:
				failed.Add(1)
				r.logger.Warn("could not resume a wait's loop; trying again", "workflow", key.workflowID, "error", err)
			}
		})
	}
	wg.Wait()
	if resumed.Load() > 0 || failed.Load() > 0 {
		r.logger.Info("resumed the loops of a host's waits", "of", host, "waits", len(running), "expected", len(expected),
			"looked_up", len(look), "resumed", resumed.Load(), "failed", failed.Load())
	}
	for _, ref := range r.loops.of(host) {
		if !seen[ref.key()] && !expected[ref.key()] && r.closed(ctx, ref.key()) {
			r.loops.stop(ref.key())
		}
	}
	if t.own {
		r.reapOrphans(ctx)
		// Off the sweep: a Describe per spooled invocation must not delay
		// the early sweeps after a restart.
		r.wg.Go(func() { r.pruneSpools(ctx) })
		if files := r.loops.files; files != nil {
			files.prune(time.Now(), func(k loopKey) bool { return seen[k] })
		}
		if j := r.loops.journal; j != nil {
			j.prune(time.Now(), func(k loopKey) bool { return seen[k] || r.loops.has(k) })
			j.pruneExpected(time.Now())
		}
	}
	return failed.Load() == 0
}

// expectedUnlisted are the runs the journal expects a loop of on the own
// host that visibility does not list (seen) and that run no loop here;
// the others are forgotten: visibility lists them now, or their loop runs
// here and is journaled.
func (r *Runtime) expectedUnlisted(seen map[loopKey]bool) []loopKey {
	j := r.loops.journal
	if j == nil {
		return nil
	}
	keys, err := j.expectedKeys()
	if err != nil {
		r.logger.Warn("could not read the expected loops; the host's waits are found through visibility only", "error", err)
		return nil
	}
	var out []loopKey
	for _, key := range keys {
		if seen[key] || r.loops.has(key) && j.has(key) {
			j.unexpect(key)
			continue
		}
		out = append(out, key)
	}
	return out
}

// reapOrphans stops the agent CLIs that run on under this host's spool
// though no loop here follows them and their invocation has ended: it
// ended while no host followed it (its max_run_sec passed with the host
// down, or an operator terminated it). An invocation's end ends its CLI.
func (r *Runtime) reapOrphans(ctx context.Context) {
	if r.opts.Agents == nil {
		return
	}
	for _, id := range r.opts.Agents.Unfollowed() {
		if r.loops.hasWorkflow(id) || !r.ended(ctx, id) || ctx.Err() != nil {
			continue
		}
		r.logger.Warn("stopping an agent CLI whose invocation ended while no host followed it", "invocation", id)
		r.wg.Go(func() { r.opts.Agents.Stop(id) }) // SIGTERM, then SIGKILL after the grace
	}
}

// runningWaits lists the running waits whose loops are on host's queue.
func (r *Runtime) runningWaits(ctx context.Context, host string) ([]*commonpb.WorkflowExecution, error) {
	query := fmt.Sprintf("%s = '%s' AND ExecutionStatus = 'Running' AND WorkflowType NOT IN ('%s', '%s')",
		workflows.SearchAttrHost, host, workflows.HostLeaseWorkflowName, workflows.LegacyHostLeaseWorkflowName)
	var out []*commonpb.WorkflowExecution
	var token []byte
	for {
		resp, err := r.opts.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: r.opts.Namespace, Query: query, PageSize: 1000, NextPageToken: token,
		})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.GetExecutions() {
			out = append(out, e.GetExecution())
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out, nil
		}
	}
}

// closed reports whether a wait's run is no longer running (false when
// Temporal cannot say).
func (r *Runtime) closed(ctx context.Context, key loopKey) bool {
	desc, err := r.opts.Client.DescribeWorkflowExecution(ctx, key.workflowID, key.runID)
	if err != nil {
		return gone(err)
	}
	return desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
}

// ended reports whether Temporal says the workflow's latest run has
// closed (false when it cannot say, or knows no such workflow).
func (r *Runtime) ended(ctx context.Context, workflowID string) bool {
	desc, err := r.opts.Client.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return false
	}
	status := desc.GetWorkflowExecutionInfo().GetStatus()
	return status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && status != enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED
}

// pendingLoop is the loop activity a wait's history shows open.
type pendingLoop struct {
	activityID   string
	activityType string
	taskQueue    string
	input        *commonpb.Payloads
	scheduled    time.Time
	// cancelRequested: the wait asked to stop it.
	cancelRequested bool
	// blockers are the keys (workflows.AgentBlocker.Key) of the blockers
	// an agent invocation was signalled.
	blockers []string
	// turns are an agent run's answers (its AnswerAgent activities).
	turns []workflows.AgentTurn
}

// loopActivities are the activity types that are a wait's loop.
var loopActivities = map[string]bool{
	workflows.PollProbeActivityName: true, workflows.WatchPaneActivityName: true, workflows.RunAgentActivityName: true,
}

// pendingLoopOf reads a wait's history for its open loop activity (nil:
// none).
func (r *Runtime) pendingLoopOf(ctx context.Context, key loopKey) (*pendingLoop, error) {
	open := map[int64]*pendingLoop{}
	var blockers []string
	var turns []workflows.AgentTurn
	iter := r.opts.Client.GetWorkflowHistory(ctx, key.workflowID, key.runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			return nil, fmt.Errorf("read the history of %s: %w", key.workflowID, err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := ev.GetActivityTaskScheduledEventAttributes()
			if a.GetActivityType().GetName() == workflows.AnswerAgentActivityName {
				var t workflows.AgentTurn
				if converter.GetDefaultDataConverter().FromPayloads(a.GetInput(), &t) == nil {
					turns = append(turns, t)
				}
			}
			if loopActivities[a.GetActivityType().GetName()] {
				open[ev.GetEventId()] = &pendingLoop{activityID: a.GetActivityId(), activityType: a.GetActivityType().GetName(),
					taskQueue: a.GetTaskQueue().GetName(), input: a.GetInput(), scheduled: ev.GetEventTime().AsTime()}
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED:
			if p := open[ev.GetActivityTaskCancelRequestedEventAttributes().GetScheduledEventId()]; p != nil {
				p.cancelRequested = true
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			delete(open, ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId())
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			delete(open, ev.GetActivityTaskFailedEventAttributes().GetScheduledEventId())
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			delete(open, ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId())
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
			delete(open, ev.GetActivityTaskCanceledEventAttributes().GetScheduledEventId())
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
			enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
			enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
			return nil, nil // the run ended (terminated, say, with its loop open): nothing to resume
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			a := ev.GetWorkflowExecutionSignaledEventAttributes()
			if a.GetSignalName() == workflows.AgentBlockerSignal {
				var b workflows.AgentBlocker
				if converter.GetDefaultDataConverter().FromPayloads(a.GetInput(), &b) == nil {
					blockers = append(blockers, b.Key())
				}
			}
		}
	}
	var latest *pendingLoop
	var latestID int64
	for id, p := range open {
		if id > latestID {
			latest, latestID = p, id
		}
	}
	if latest != nil {
		latest.blockers, latest.turns = blockers, turns
	}
	return latest, nil
}

// undecodable is a loop whose recorded input cannot be read: no sweep
// will resume it (its wait ends at its bound plus LoopGrace, with no
// host), so it is not tried again at once.
type undecodable struct{ error }

func (u undecodable) Unwrap() error { return u.error }

// queueDelivery is how long a loop scheduled after this worker got its
// host's lease is left to the host's queue. One that has not arrived by
// then was handed to a poll of a process that died (Temporal gives an
// activity task to a poll whose process can no longer answer, and with no
// heartbeat nothing retries it), and the next sweep resumes it.
const queueDelivery = 10 * time.Second

// resumeOutcome is what resume did.
type resumeOutcome int

const (
	// resumeNone: the run has no open loop (between loops, or ended).
	resumeNone resumeOutcome = iota
	// resumeStarted: the loop runs here now.
	resumeStarted
	// resumeQueued: the loop was scheduled lately, after this worker began
	// to poll the host's queue, which brings it (queueDelivery).
	resumeQueued
	// resumeElsewhere: the loop is on another host's queue.
	resumeElsewhere
	// resumeCannot: this worker cannot run the loop (a pane or an agent of
	// another machine): the host's own worker resumes it.
	resumeCannot
)

// resume starts the loop of a wait of host that runs no loop here, from
// what Temporal recorded: its loop activity's input, and what a probe
// loop recorded (workflows.ProbeRecord); unless the loop was scheduled
// after held (this worker got the host's lease then) and lately: the
// host's queue brings it here (see queueDelivery).
func (r *Runtime) resume(ctx context.Context, host string, key loopKey, held time.Time) (resumeOutcome, error) {
	p, err := r.pendingLoopOf(ctx, key)
	if err != nil || p == nil {
		return resumeNone, err
	}
	if !p.scheduled.Before(held) && time.Since(p.scheduled) < queueDelivery {
		return resumeQueued, nil
	}
	if p.taskQueue != workflows.HostQueue(r.opts.TaskQueue, host) {
		return resumeElsewhere, nil // not on this host's queue (moved, or not yet)
	}
	ref := loopRef{WorkflowID: key.workflowID, RunID: key.runID, ActivityID: p.activityID, Host: host}
	if p.cancelRequested {
		r.loops.stop(key) // it starts stopped, and answers cancelled
	}
	dc := converter.GetDefaultDataConverter()
	switch p.activityType {
	case workflows.PollProbeActivityName:
		var in workflows.PollInput
		if err := dc.FromPayloads(p.input, &in); err != nil {
			return resumeNone, undecodable{fmt.Errorf("decode the probe loop's input: %w", err)}
		}
		record, err := r.probeRecord(ctx, key, p.activityID)
		if err != nil {
			return resumeNone, err
		}
		r.startProbe(ctx, ref, in, &record, false)
	case workflows.WatchPaneActivityName:
		var in workflows.WatchPaneInput
		if err := dc.FromPayloads(p.input, &in); err != nil {
			return resumeNone, undecodable{fmt.Errorf("decode the pane watch's input: %w", err)}
		}
		if !r.canWatch(in) {
			return resumeCannot, nil
		}
		r.startWatch(ctx, ref, in, false)
	case workflows.RunAgentActivityName:
		var in workflows.RunAgentInput
		if err := dc.FromPayloads(p.input, &in); err != nil {
			return resumeNone, undecodable{fmt.Errorf("decode the agent run's input: %w", err)}
		}
		if !r.canFollow(in) {
			return resumeCannot, nil
		}
		r.startAgent(ctx, ref, activities.AgentRun{Input: in, Signalled: p.blockers, Turns: p.turns}, false)
	default:
		return resumeNone, nil
	}
	return resumeStarted, nil
}

// probeRecord is what a probe loop recorded (its activity's heartbeat
// details, workflows.ProbeRecord); a zero record for a loop that
// recorded nothing.
func (r *Runtime) probeRecord(ctx context.Context, key loopKey, activityID string) (workflows.ProbeRecord, error) {
	var record workflows.ProbeRecord
	desc, err := r.opts.Client.DescribeWorkflowExecution(ctx, key.workflowID, key.runID)
	if err != nil {
		return record, fmt.Errorf("describe %s: %w", key.workflowID, err)
	}
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetActivityId() == activityID && pa.GetHeartbeatDetails() != nil {
			if err := converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &record); err != nil {
				return workflows.ProbeRecord{}, nil // unreadable: start again
			}
		}
	}
	return record, nil
}
