package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// Billable actions: what Temporal Cloud bills, counted the way the Temporal
// server counts them (its "action" counter, tagged action_type:
// go.temporal.io/server common/rpc/interceptor/telemetry.go,
// emitActionMetric). Two independent counts:
//
//   - the metric: durawait's durawait_engine_actions_total on /metrics for
//     the embedded engine (durawaitActions), the production
//     temporal-server's own action counter on its Prometheus listener
//     (temporalServerActions); measureActions reads one before and after a
//     wait and returns the difference;
//   - the histories: historyActions counts, in the workflow histories of
//     the engine, the events that are billed (historyActionsBetween, for
//     every workflow with events in a time window). Heartbeats, queries and
//     rejected updates leave nothing in a history: the history count plus
//     the metric's count of those (metricOnly) is the full figure.
//
// Markers are billed by batch: the server counts one command_BatchMarkers
// per workflow task that recorded any marker (Temporal Cloud bills the
// batch, not each marker; v1.32.1 records no per-marker count, a later
// server may, as command_RecordMarker_*), so billable() ignores
// command_RecordMarker_* and the history count counts one batch per
// workflow task.

// actionCounts are billable actions by action_type (the server's names).
type actionCounts map[string]int64

// The action types of the server that matter here.
const (
	actionStart           = "grpc_StartWorkflowExecution"
	actionSignal          = "grpc_SignalWorkflowExecution"
	actionSignalWithStart = "grpc_SignalWithStartWorkflowExecution"
	actionHeartbeat       = "grpc_RecordActivityTaskHeartbeat"
	actionHeartbeatByID   = "grpc_RecordActivityTaskHeartbeatById"
	actionQuery           = "grpc_QueryWorkflow"
	actionBatchMarkers    = "command_BatchMarkers"
	actionRetry           = "activity_retry"
	actionUpdateAccepted  = "message_UpdateWorkflowExecution:Acceptance"
	actionUpdateRejected  = "message_UpdateWorkflowExecution:Rejection"
	actionOptionsUpdated  = "grpc_StartWorkflowExecution_UpdateWorkflowExecutionOptions"
	perMarkerPrefix       = "command_RecordMarker_"
)

// billable is the total Temporal Cloud would bill: every action, markers
// counted as batches (command_BatchMarkers; any command_RecordMarker_* is
// left out).
func (a actionCounts) billable() int64 {
	var n int64
	for k, v := range a {
		if !strings.HasPrefix(k, perMarkerPrefix) {
			n += v
		}
	}
	return n
}

// heartbeats are the activity heartbeats among a.
func (a actionCounts) heartbeats() int64 { return a[actionHeartbeat] + a[actionHeartbeatByID] }

// metricOnly are the actions a workflow history does not show: heartbeats,
// queries and rejected updates (and, for a SignalWithStart, that the
// server counts its start and signal as one action).
func (a actionCounts) metricOnly() actionCounts {
	out := actionCounts{}
	for _, k := range []string{actionHeartbeat, actionHeartbeatByID, actionQuery, actionUpdateRejected} {
		if a[k] != 0 {
			out[k] = a[k]
		}
	}
	return out
}

// historyVisible is a without its metricOnly actions and per-marker
// counts: what historyActions can count too. A signal-with-start counts
// as a signal: a history cannot tell one that found its workflow running
// from a signal.
func (a actionCounts) historyVisible() actionCounts {
	only := a.metricOnly()
	out := actionCounts{}
	for k, v := range a {
		if k == actionSignalWithStart {
			k = actionSignal
		}
		if _, skip := only[k]; !skip && !strings.HasPrefix(k, perMarkerPrefix) && v != 0 {
			out[k] += v
		}
	}
	return out
}

// add adds b to a.
func (a actionCounts) add(b actionCounts) {
	for k, v := range b {
		a[k] += v
	}
}

// minus is a - b, without the types that did not change.
func (a actionCounts) minus(b actionCounts) actionCounts {
	out := actionCounts{}
	for k, v := range a {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok && v != 0 {
			out[k] = -v
		}
	}
	return out
}

// String is the breakdown, largest first, as "8 = 3 grpc_RecordActivityTaskHeartbeat + 2 …";
// per-marker counts, which are not billed, follow in parentheses.
func (a actionCounts) String() string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if a[keys[i]] != a[keys[j]] {
			return a[keys[i]] > a[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var billed, markers []string
	for _, k := range keys {
		if strings.HasPrefix(k, perMarkerPrefix) {
			markers = append(markers, fmt.Sprintf("%d %s", a[k], k))
		} else {
			billed = append(billed, fmt.Sprintf("%d %s", a[k], k))
		}
	}
	out := fmt.Sprint(a.billable())
	if len(billed) > 0 {
		out += " = " + strings.Join(billed, " + ")
	}
	if len(markers) > 0 {
		out += " (not billed: " + strings.Join(markers, ", ") + ")"
	}
	return out
}

// actionSource reads an engine's action counter: the cumulative count of
// each action type since the engine started.
type actionSource func(t testing.TB) actionCounts

// durawaitActions reads the embedded engine's actions on the /metrics of
// the durawait serve at httpAddr (durawait_engine_actions_total, by
// action_type).
func durawaitActions(httpAddr string) actionSource {
	return func(t testing.TB) actionCounts {
		t.Helper()
		return scrapeActions(t, "http://"+httpAddr+"/metrics", "durawait_engine_actions_total", func(map[string]string) bool { return true })
	}
}

// temporalServerActions reads a production temporal-server's action
// counter on its Prometheus listener (global.metrics.prometheus of its
// config, temporalServer.Metrics), summed over the server's other tags,
// for one namespace (all but the server's own temporal-system when
// namespace is empty).
func temporalServerActions(metricsAddr, namespace string) actionSource {
	return func(t testing.TB) actionCounts {
		t.Helper()
		keep := func(labels map[string]string) bool {
			if namespace == "" {
				return labels["namespace"] != "temporal-system"
			}
			return labels["namespace"] == namespace
		}
		// The OpenTelemetry framework of the server exports the counter
		// as action_total; tally would name it action.
		out := scrapeActions(t, "http://"+metricsAddr+"/metrics", "action_total", keep)
		out.add(scrapeActions(t, "http://"+metricsAddr+"/metrics", "action", keep))
		return out
	}
}

// scrapeActions reads the Prometheus exposition at url and sums the
// samples of metric that keep accepts, by their action_type label.
func scrapeActions(t testing.TB, url, metric string, keep func(labels map[string]string) bool) actionCounts {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err, "scrape %s", url)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "scrape %s", url)
	out, err := parseActions(resp.Body, metric, keep)
	require.NoError(t, err, "parse %s", url)
	return out
}

// parseActions reads metric's samples from a Prometheus text exposition.
func parseActions(r io.Reader, metric string, keep func(labels map[string]string) bool) (actionCounts, error) {
	out := actionCounts{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metric) || (len(line) > len(metric) && line[len(metric)] != '{' && line[len(metric)] != ' ') {
			continue
		}
		rest := line[len(metric):]
		labels := map[string]string{}
		if strings.HasPrefix(rest, "{") {
			var err error
			labels, rest, err = parseLabels(rest[1:])
			if err != nil {
				return nil, fmt.Errorf("%q: %w", line, err)
			}
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("%q: no value", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		if keep(labels) {
			out[labels["action_type"]] += int64(v)
		}
	}
	return out, sc.Err()
}

// parseLabels reads `name="value",…}` and returns the labels and what
// follows the closing brace.
func parseLabels(s string) (map[string]string, string, error) {
	labels := map[string]string{}
	for {
		s = strings.TrimLeft(s, " ,")
		if strings.HasPrefix(s, "}") {
			return labels, s[1:], nil
		}
		name, rest, ok := strings.Cut(s, "=\"")
		if !ok {
			return nil, "", fmt.Errorf("bad labels at %q", s)
		}
		var value strings.Builder
		i := 0
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
				switch rest[i] {
				case 'n':
					value.WriteByte('\n')
				default:
					value.WriteByte(rest[i])
				}
				continue
			}
			value.WriteByte(rest[i])
		}
		if i == len(rest) {
			return nil, "", fmt.Errorf("unterminated label %s", name)
		}
		labels[strings.TrimSpace(name)] = value.String()
		s = rest[i+1:]
	}
}

// settledActions reads src until two reads a second apart agree (the
// engine's last actions of a wait, such as its closing workflow task,
// land just after the caller has its answer), at most testTimeout.
func settledActions(t testing.TB, src actionSource) actionCounts {
	t.Helper()
	last := src(t)
	deadline := time.Now().Add(testTimeout)
	for {
		time.Sleep(time.Second)
		now := src(t)
		if len(now.minus(last)) == 0 || time.Now().After(deadline) {
			return now
		}
		last = now
	}
}

// measureActions runs run (one wait, or a set) between two reads of src
// and returns the engine's actions in between, and when the reads were
// (the window, for historyActionsBetween). The engine must be quiet
// otherwise (its own waits only): the counter is the engine's, not a
// wait's. run returns once what it measures has ended (its workflows
// closed); the second read waits for the counter to settle.
func measureActions(t testing.TB, src actionSource, run func()) (_ actionCounts, from, to time.Time) {
	t.Helper()
	before := settledActions(t, src)
	from = time.Now()
	run()
	after := settledActions(t, src)
	return after.minus(before), from, time.Now()
}

// historyActions counts the billable actions in one workflow run's history
// whose events happened in [from, to] (zero times: no bound): the start
// (unless a parent or a continue-as-new started it), each billed command
// (ActivityTaskScheduled, TimerStarted, UpsertWorkflowSearchAttributes,
// WorkflowPropertiesModified, SignalExternalWorkflowExecutionInitiated,
// StartChildWorkflowExecutionInitiated (2), ContinuedAsNew, Nexus
// operations scheduled and cancel-requested), markers as one batch per
// workflow task, signals from clients (a workflow's signal is billed to
// the sender's command), accepted updates, start options updated on an
// attach, and activity retries (an ActivityTaskStarted's attempt - 1: the
// attempts before it); a start whose next event is a client's signal is a
// signal-with-start, one action. Not there: heartbeats, queries, rejected
// updates (see metricOnly).
func historyActions(t testing.TB, tc client.Client, workflowID, runID string, from, to time.Time) actionCounts {
	t.Helper()
	out := actionCounts{}
	batches := map[int64]bool{} // workflow tasks (their completed event) that recorded markers
	it := tc.GetWorkflowHistory(context.Background(), workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		at := ev.GetEventTime().AsTime()
		if (!from.IsZero() && at.Before(from)) || (!to.IsZero() && at.After(to)) {
			continue
		}
		if a := ev.GetWorkflowExecutionSignaledEventAttributes(); ev.GetEventId() == 2 && out[actionStart] == 1 && a != nil && a.GetExternalWorkflowExecution() == nil {
			// Started by a signal-with-start: one action for both.
			out[actionStart] = 0
			out[actionSignalWithStart]++
			continue
		}
		countEvent(out, batches, ev)
	}
	if out[actionStart] == 0 {
		delete(out, actionStart)
	}
	if len(batches) > 0 {
		out[actionBatchMarkers] += int64(len(batches))
	}
	return out
}

// countEvent adds the billable actions of one history event to out.
func countEvent(out actionCounts, batches map[int64]bool, ev *historypb.HistoryEvent) {
	command := func(name string) { out["command_"+name]++ }
	switch ev.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
		a := ev.GetWorkflowExecutionStartedEventAttributes()
		if a.GetParentWorkflowExecution() == nil && a.GetContinuedExecutionRunId() == "" {
			out[actionStart]++
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		command("ScheduleActivityTask")
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
		if n := ev.GetActivityTaskStartedEventAttributes().GetAttempt(); n > 1 {
			out[actionRetry] += int64(n - 1)
		}
	case enumspb.EVENT_TYPE_TIMER_STARTED:
		command("StartTimer")
	case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
		command("UpsertWorkflowSearchAttributes")
	case enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
		command("ModifyWorkflowProperties")
	case enumspb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
		command("SignalExternalWorkflowExecution")
	case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
		command("StartChildWorkflowExecution")
		command("StartChildWorkflowExecution_Extra")
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		command("ContinueAsNewWorkflowExecution")
	case enumspb.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED:
		command("ScheduleNexusOperation")
	case enumspb.EVENT_TYPE_NEXUS_OPERATION_CANCEL_REQUESTED:
		command("RequestCancelNexusOperation")
	case enumspb.EVENT_TYPE_MARKER_RECORDED:
		batches[ev.GetMarkerRecordedEventAttributes().GetWorkflowTaskCompletedEventId()] = true
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
		if ev.GetWorkflowExecutionSignaledEventAttributes().GetExternalWorkflowExecution() == nil {
			out[actionSignal]++
		}
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
		out[actionUpdateAccepted]++
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED:
		out[actionOptionsUpdated]++
	}
}

// historyActionsBetween counts, per workflow run ("type id"), the billable
// actions of every run of the engine's namespace with events in [from,
// to]: the wait's own and any other (a catalog publication, a host's).
func historyActionsBetween(t testing.TB, tc client.Client, from, to time.Time) map[string]actionCounts {
	t.Helper()
	out := map[string]actionCounts{}
	var token []byte
	for {
		resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{NextPageToken: token})
		require.NoError(t, err)
		for _, e := range resp.Executions {
			if e.GetStartTime().AsTime().After(to) || (e.GetCloseTime() != nil && e.GetCloseTime().AsTime().Before(from)) {
				continue
			}
			counts := historyActions(t, tc, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), from, to)
			if len(counts) > 0 {
				out[e.GetType().GetName()+" "+e.GetExecution().GetWorkflowId()] = counts
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			return out
		}
	}
}

// sumActions adds up per-workflow counts.
func sumActions(per map[string]actionCounts) actionCounts {
	out := actionCounts{}
	for _, c := range per {
		out.add(c)
	}
	return out
}

func TestParseActions(t *testing.T) {
	text := `# HELP durawait_engine_actions_total Billable actions
# TYPE durawait_engine_actions_total counter
durawait_engine_actions_total{action_type="command_BatchMarkers",otel_scope_name="x"} 1
durawait_engine_actions_total{action_type="grpc_RecordActivityTaskHeartbeat",otel_scope_name="x"} 73
durawait_engine_actions_totalish{action_type="grpc_RecordActivityTaskHeartbeat"} 5
action_total{action_type="grpc_StartWorkflowExecution",namespace="durawait-e2e",operation="StartWorkflowExecution",service_name="frontend"} 2
action_total{action_type="grpc_StartWorkflowExecution",namespace="temporal-system",operation="StartWorkflowExecution",service_name="frontend"} 3
action_total{action_type="message_UpdateWorkflowExecution:Acceptance",namespace="a \"quoted\" one",operation="RespondWorkflowTaskCompleted"} 4
`
	got, err := parseActions(strings.NewReader(text), "durawait_engine_actions_total", func(map[string]string) bool { return true })
	require.NoError(t, err)
	require.Equal(t, actionCounts{"command_BatchMarkers": 1, "grpc_RecordActivityTaskHeartbeat": 73}, got)
	got, err = parseActions(strings.NewReader(text), "action_total", func(l map[string]string) bool { return l["namespace"] != "temporal-system" })
	require.NoError(t, err)
	require.Equal(t, actionCounts{"grpc_StartWorkflowExecution": 2, "message_UpdateWorkflowExecution:Acceptance": 4}, got)

	a := actionCounts{actionBatchMarkers: 1, perMarkerPrefix + "SideEffect": 3, actionHeartbeat: 5, actionStart: 1}
	require.Equal(t, int64(7), a.billable(), "markers count as their batch")
	require.Equal(t, actionCounts{actionHeartbeat: 5}, a.metricOnly())
	require.Equal(t, actionCounts{actionBatchMarkers: 1, actionStart: 1}, a.historyVisible())
	require.Equal(t, actionCounts{actionSignal: 3}, actionCounts{actionSignal: 1, actionSignalWithStart: 2}.historyVisible())
	require.Equal(t, "7 = 5 grpc_RecordActivityTaskHeartbeat + 1 command_BatchMarkers + 1 grpc_StartWorkflowExecution (not billed: 3 command_RecordMarker_SideEffect)", a.String())
}
