package waits

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/user"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/durawait/durawait/workflows"
)

// Detail is `durawait waits show`: the call, every state change, the last
// observation and the result.
type Detail struct {
	Wait
	WorkflowType string `json:"workflow_type"`
	// Arguments is the workflow's input: the call's parsed arguments.
	Arguments any            `json:"arguments"`
	Memo      map[string]any `json:"memo,omitempty"`
	Changes   []Change       `json:"changes"`
	// LastObservation is what the wait saw last: a running wait's latest
	// heartbeat (wait_for's probe loop records its progress there) or its
	// state query (agents); a closed wait's result holds it.
	LastObservation any `json:"last_observation,omitempty"`
	// Result is a completed wait's result; Failure a failed, cancelled,
	// timed-out or terminated one's reason.
	Result  any    `json:"result,omitempty"`
	Failure string `json:"failure,omitempty"`
}

// Change is one state change of a wait, from its history.
type Change struct {
	Time time.Time `json:"time"`
	What string    `json:"what"`
	// Identity is who caused it, when Temporal records it (a cancel's
	// operator, the client that started it).
	Identity string `json:"identity,omitempty"`
}

// ErrNotFound says no wait has the ID.
var ErrNotFound = errors.New("no wait with this ID")

// Show reads a wait's detail: its latest run's history, and while it
// runs, its pending activities' heartbeats (or its state query).
func Show(ctx context.Context, c client.Client, id string) (Detail, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return Detail{}, fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		return Detail{}, fmt.Errorf("describe wait %s: %w", id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	d := Detail{Wait: waitOf(info), WorkflowType: info.GetType().GetName(), Memo: map[string]any{}}
	if s, ok := decode(desc.GetExecutionConfig().GetUserMetadata().GetSummary()).(string); ok {
		d.Summary = s
	}
	for k, p := range info.GetMemo().GetFields() {
		d.Memo[k] = decode(p)
	}
	iter := c.GetWorkflowHistory(ctx, id, d.RunID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			return Detail{}, fmt.Errorf("read the history of wait %s: %w", id, err)
		}
		d.apply(ev)
	}
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		for _, pa := range desc.GetPendingActivities() {
			if v := heartbeatOf(pa); v != nil {
				d.LastObservation = v
			}
		}
		if d.WorkflowType == workflows.WaitForWorkflowName {
			if p, ok := observe(ctx, c, id, d.RunID); ok {
				d.LastObservation = p
			}
		}
		if d.WorkflowType == workflows.AgentWorkflowName {
			if q, err := c.QueryWorkflow(ctx, id, d.RunID, workflows.AgentStateQuery); err == nil {
				var state any
				if q.Get(&state) == nil {
					d.LastObservation = state
				}
			}
		}
	} else if m, ok := d.Result.(map[string]any); ok {
		if obs, ok := m["last_observation"]; ok {
			d.LastObservation = obs
		}
	}
	return d, nil
}

// observeTimeout bounds how long show waits for a running wait_for's
// host to say what its probe loop saw last.
const observeTimeout = 10 * time.Second

// observe asks a running wait_for what its probe loop saw last (the
// WaitObserveUpdate, which asks the loop's host: the progress lives in its
// memory); false when it cannot say.
func observe(ctx context.Context, c client.Client, id, runID string) (workflows.PollProgress, bool) {
	ctx, cancel := context.WithTimeout(ctx, observeTimeout)
	defer cancel()
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, RunID: runID, UpdateName: workflows.WaitObserveUpdate, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return workflows.PollProgress{}, false
	}
	var p workflows.PollProgress
	if err := h.Get(ctx, &p); err != nil {
		return workflows.PollProgress{}, false
	}
	return p, true
}

// heartbeatOf is what a pending activity's heartbeat details say: a
// probe loop's record (workflows.ProbeRecord), or any other
// activity's details as they are.
func heartbeatOf(pa *workflowpb.PendingActivityInfo) any {
	details := pa.GetHeartbeatDetails()
	if len(details.GetPayloads()) == 0 {
		return nil
	}
	if pa.GetActivityType().GetName() == workflows.PollProbeActivityName {
		var record workflows.ProbeRecord
		if err := converter.GetDefaultDataConverter().FromPayloads(details, &record); err == nil {
			return recordedObservation(record)
		}
	}
	return decodeAll(details)
}

// recordedObservation is a probe loop's record as show prints it: in the
// fields of what a live loop says (workflows.PollProgress), with recorded
// set, as it is what the loop last recorded, not what its host says now.
func recordedObservation(r workflows.ProbeRecord) map[string]any {
	out := map[string]any{"recorded": true, "has_observation": r.Observed, "last_observation": r.Observation}
	if !r.QuietSince.IsZero() {
		out["quiet_since"] = r.QuietSince
	}
	return out
}

// apply adds what one history event says to d.
func (d *Detail) apply(ev *historypb.HistoryEvent) {
	at := ev.GetEventTime().AsTime()
	add := func(what, identity string) {
		d.Changes = append(d.Changes, Change{Time: at, What: what, Identity: identity})
	}
	switch ev.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
		a := ev.GetWorkflowExecutionStartedEventAttributes()
		d.Arguments = decodeAll(a.GetInput())
		what := "started"
		if kw := keywords(a.GetSearchAttributes()); len(kw) > 0 {
			what += " with " + attrList(kw)
		}
		add(what, a.GetIdentity())
	case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
		add("search attributes: "+attrList(keywords(ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes())), "")
	case enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
		fields := ev.GetWorkflowPropertiesModifiedEventAttributes().GetUpsertedMemo().GetFields()
		parts := make([]string, 0, len(fields))
		for k, p := range fields {
			parts = append(parts, fmt.Sprintf("%s=%v", k, decode(p)))
		}
		sort.Strings(parts)
		add("memo: "+strings.Join(parts, ", "), "")
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		add("activity "+ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()+" scheduled", "")
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
		add("activity failed: "+ev.GetActivityTaskFailedEventAttributes().GetFailure().GetMessage(), "")
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
		add("activity timed out: "+ev.GetActivityTaskTimedOutEventAttributes().GetFailure().GetMessage(), "")
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
		a := ev.GetWorkflowExecutionSignaledEventAttributes()
		add("signal "+a.GetSignalName(), a.GetIdentity())
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
		add("update "+ev.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput().GetName()+" accepted", "")
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
		a := ev.GetWorkflowExecutionCancelRequestedEventAttributes()
		what := "cancel requested"
		if a.GetCause() != "" {
			what += ": " + a.GetCause()
		}
		add(what, a.GetIdentity())
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
		d.Result = decodeAll(ev.GetWorkflowExecutionCompletedEventAttributes().GetResult())
		add("completed", "")
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
		failure := ev.GetWorkflowExecutionFailedEventAttributes().GetFailure()
		d.Failure = failure.GetMessage()
		if app := failure.GetApplicationFailureInfo(); app.GetType() == workflows.ErrTypeAgentFailed && len(app.GetDetails().GetPayloads()) > 0 {
			d.Result = decode(app.GetDetails().GetPayloads()[0]) // a failed agent's final payload
		}
		add("failed: "+d.Failure, "")
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
		d.Failure = "canceled"
		if details := ev.GetWorkflowExecutionCanceledEventAttributes().GetDetails().GetPayloads(); len(details) > 0 {
			// An invocation carries its final payload first (a
			// cancel_agent's close, then its marker).
			d.Result = decode(details[0])
		}
		add(d.Failure, "")
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
		d.Failure = "timed out (Temporal's workflow timeout)"
		add(d.Failure, "")
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
		a := ev.GetWorkflowExecutionTerminatedEventAttributes()
		d.Failure = "terminated: " + a.GetReason()
		add(d.Failure, a.GetIdentity())
	}
}

func attrList(kw map[string]string) string {
	parts := make([]string, 0, len(kw))
	for k, v := range kw {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// OperatorIdentity is the client identity `durawait waits` acts under, so
// a cancelled wait names who cancelled it: durawait-waits:<user>@<host>.
func OperatorIdentity() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown"
	}
	return "durawait-waits:" + name + "@" + host
}

// requestID is a fresh ID for one request to the engine (its
// deduplication key).
func requestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Cancel requests the cancellation of a running wait in namespace, for
// reason ("": none given). OperatorIdentity and the reason are recorded in
// the wait's history as who cancelled it and why. A wait that is not
// running is an error that says its state; durawait's internal workflows
// (the catalog, the hosts' leases) are refused.
func Cancel(ctx context.Context, c client.Client, namespace, id, reason string) error {
	if toolOfID(id) == "internal" {
		return fmt.Errorf("%s is durawait's internal workflow (a task queue's downstream catalog, or a host's lease), not a wait: it is not cancelled with durawait waits", id)
	}
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		return fmt.Errorf("describe wait %s: %w", id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return fmt.Errorf("wait %s is not running (it is %s): nothing to cancel", id, statusName(info.GetStatus()))
	}
	_, err = c.WorkflowService().RequestCancelWorkflowExecution(ctx, &workflowservice.RequestCancelWorkflowExecutionRequest{
		Namespace:         namespace,
		WorkflowExecution: info.GetExecution(),
		Identity:          OperatorIdentity(),
		RequestId:         requestID(),
		Reason:            reason,
	})
	if err != nil {
		return fmt.Errorf("cancel wait %s: %w", id, err)
	}
	return nil
}
