package e2e

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/durawait/durawait/workflows"
)

// queryCatalog reads the workers' downstream catalog.
func queryCatalog(tc client.Client) (workflows.DownstreamCatalog, error) {
	var cat workflows.DownstreamCatalog
	v, err := tc.QueryWorkflow(context.Background(), workflows.CatalogWorkflowID("durawait"), "", workflows.CatalogQueryName)
	if err != nil {
		return cat, err
	}
	return cat, v.Get(&cat)
}

// activityRun is one attempt of an activity: the worker that took it.
type activityRun struct {
	identity string
	pid      int // the worker's process, from its SDK identity (pid@host@...)
	attempt  int32
}

func runOf(identity string, attempt int32) activityRun {
	pid, _, _ := strings.Cut(identity, "@")
	n, _ := strconv.Atoi(pid)
	return activityRun{identity: identity, pid: n, attempt: attempt}
}

// activityRuns lists the recorded starts of the workflow's activities of
// type activity, in history order (a retried activity records the attempt
// that ended it).
func activityRuns(t testing.TB, tc client.Client, workflowID, activity string) []activityRun {
	t.Helper()
	it := tc.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]bool{}
	var runs []activityRun
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activity {
			scheduled[ev.GetEventId()] = true
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] {
			runs = append(runs, runOf(a.GetIdentity(), a.GetAttempt()))
		}
	}
	return runs
}

// pendingProbe is the running wait's probe loop as Temporal sees it: the
// worker that last took it and its attempt (zero until a worker took it).
func pendingProbe(t testing.TB, tc client.Client, workflowID string) activityRun {
	t.Helper()
	var run activityRun
	eventually(t, "the probe loop to be taken by a worker", func() bool {
		d, err := tc.DescribeWorkflowExecution(context.Background(), workflowID, "")
		if err != nil {
			return false
		}
		for _, p := range d.GetPendingActivities() {
			if p.GetActivityType().GetName() == workflows.PollProbeActivityName && p.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
				run = runOf(p.GetLastWorkerIdentity(), p.GetAttempt())
				return run.pid > 0
			}
		}
		return false
	})
	return run
}

// completedBy is who answered the workflow's last activity of type
// activity: the identity its completion recorded (a host answers a loop's
// activity by ID, whichever worker took it first).
func completedBy(t testing.TB, tc client.Client, workflowID, activity string) activityRun {
	t.Helper()
	it := tc.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]bool{}
	var last activityRun
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activity {
			scheduled[ev.GetEventId()] = true
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] {
			last = runOf(a.GetIdentity(), 0)
		}
	}
	return last
}

// waitHost is the host a wait's loop runs on (its DurawaitHost).
func waitHost(t testing.TB, tc client.Client, workflowID string) string {
	t.Helper()
	var host string
	eventually(t, "the wait's host", func() bool {
		d, err := tc.DescribeWorkflowExecution(context.Background(), workflowID, "")
		if err != nil {
			return false
		}
		p := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[workflows.SearchAttrHost]
		return p != nil && converter.GetDefaultDataConverter().FromPayload(p, &host) == nil && host != ""
	})
	return host
}

// ownLease is the log line of a worker that holds its own host's lease.
var ownLease = regexp.MustCompile(`holding the lease of a host.*lease_of=(\S+) own=true`)

// ownHost is the host of a durawait worker process, from its log.
func ownHost(t testing.TB, inst *instance) string {
	t.Helper()
	var host string
	eventually(t, "the worker to hold its own host's lease", func() bool {
		if m := ownLease.FindStringSubmatch(inst.log.String()); m != nil {
			host = m[1]
		}
		return host != ""
	})
	return host
}
