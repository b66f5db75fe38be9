package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/durawait/durawait/workflows"
)

// The soak's judge. It counts what it sees: every wait's final answer
// against its plan and against the engine's record of the run it came
// from, every run of every wait in the engine, every failed client call
// against the classes the contract tells a client to retry, and the fake
// agent CLI's own record of how each run ended. An answer other than the
// planned one is excused only when the judge's own evidence (the soak's
// record of when durawait was down: each kill, each restart's /healthz
// 200, each stall; the engine's history of the run) shows the premise of
// the excuse; excused answers are counted on their own line, never as
// right. docs/soak.md lists the rules.

// soakVerdict is the judge's finding: the failures (any fails the run) and
// the report.
type soakVerdict struct {
	failures []soakFailure
	report   string
}

// soakFailure is one breach of the contract: the rule it breaks, the wait
// (nil for none) and the evidence.
type soakFailure struct {
	rule     string
	wait     *soakWait
	evidence string
}

func (f soakFailure) String() string {
	if f.wait == nil {
		return f.rule + ": " + f.evidence
	}
	return fmt.Sprintf("%s: wait %d (%s, %s): %s", f.rule, f.wait.id, f.wait.kind, f.wait.protocol, f.evidence)
}

// failed reports whether the verdict has a failure of rule for a wait of
// one of kinds (any wait, when none are given).
func (v soakVerdict) failed(rule string, kinds ...soakKind) bool {
	return slices.ContainsFunc(v.failures, func(f soakFailure) bool {
		return f.rule == rule && (len(kinds) == 0 || (f.wait != nil && slices.Contains(kinds, f.wait.kind)))
	})
}

// The judge's rules, by the name its failures carry.
const (
	ruleLost        = "lost"                            // no answer within soakLostAfter of the last kill
	ruleWrongAnswer = "wrong answer"                    // the client's answer is not the planned one, and no evidence excuses it
	ruleNotItsRun   = "answer differs from its run"     // the client was told other than the engine recorded
	ruleWrongRun    = "wrong run"                       // a run of the wait closed with an outcome not planned, unexcused
	ruleOpenRun     = "run left open"                   // still open openSettleLimit after the judge began
	ruleNoRun       = "no run"                          // an answered wait without a run in the engine
	ruleStrayRun    = "run of no planned wait"          // a run whose input names no planned wait
	ruleTwice       = "twice"                           // an agent invoked or its CLI run more than once
	ruleCLIKilled   = "agent CLI killed"                // the fake CLI recorded its death by a signal
	ruleNonContract = "non-contract failure"            // a failed call of a class the contract does not tell a client to retry
	ruleStartExit   = "durawait exited during start-up" // a restart that never answered /healthz 200
	ruleProtocol    = "protocol era"                    // an era's clients carried no wait to its right answer
)

// soakAnswerMargin is how soon after max_wait_sec a wait answers by
// contract ("within max_wait_sec + 1 s", README).
const soakAnswerMargin = time.Second

// soakRecoveryTarget is how soon after a restart every wait samples again
// (DESIGN.md's target for recovery after kill -9: within 10 s p99). A
// stretch this long with durawait up and running gives a lost probe loop
// or pane watch its worker back; see judge.noWorkerFor.
const soakRecoveryTarget = 10 * time.Second

// soakBaselineSlack is how long after a pane watch's attempt started (the
// engine's ActivityTaskStarted time) its baseline may still be read
// (attaching the control client, capture-pane, on a loaded machine): text
// printed in that moment may be in the baseline or the output.
const soakBaselineSlack = 3 * time.Second

// openSettleLimit bounds how long the judge waits, after every client had
// its answer, for a run the engine still has open: an answer delivered in
// process (the probe loop's observer) can precede its run's close by a
// kill, and the run closes once a restarted worker re-runs its activity
// (after the heartbeat timeout), within the wait's 300 s cap.
const openSettleLimit = 6 * time.Minute

// soakRun is one run of a workflow, as the engine's history has it.
type soakRun struct {
	typ, id, runID string
	start, closed  time.Time // closed is zero while open
	status         enumspb.WorkflowExecutionStatus
	input          string
	prompt         string // an agent invocation's prompt (its memo)
	result         string // a completed run's result (JSON)
	failure        string // a failed run's failure message
	failureType    string // and its application error type
	// attemptStart is when the attempt that ended the run's watch activity
	// (PollProbe, WatchPane) started: the engine's ActivityTaskStarted
	// event time; zero when no attempt ended it (Temporal's timeout with
	// none running) or when no worker took the task before a host answered
	// it by ID (the engine then writes a started event of its own, at the
	// answer). heartbeat is that activity's heartbeat timeout.
	attemptStart time.Time
	heartbeat    time.Duration
	// pending describes a run still open: its pending activities.
	pending string
}

func (r *soakRun) String() string {
	out := fmt.Sprintf("%s run %s started %s", r.typ, shortRun(r.runID), clock(r.start))
	if !r.attemptStart.IsZero() {
		out += ", last attempt " + clock(r.attemptStart)
	}
	if r.closed.IsZero() {
		return out + ", open" + r.pending
	}
	out += fmt.Sprintf(", closed %s %s", clock(r.closed), strings.TrimPrefix(r.status.String(), "WORKFLOW_EXECUTION_STATUS_"))
	if r.result != "" {
		out += ": " + shortText(r.result, 300)
	}
	if r.failure != "" {
		out += fmt.Sprintf(": %s %q", r.failureType, r.failure)
	}
	return out
}

// shortRun is a run ID's tail: its head (UUIDv7) is a timestamp, which
// runs begun close together share.
func shortRun(id string) string {
	return id[max(0, len(id)-8):]
}

func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("15:04:05.000")
}

func shortText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// judge is the soak's judge at work: the evidence and the tallies.
type judge struct {
	s  *soak
	tc sdkclient.Client
	v  soakVerdict
	// runs are the engine's runs of each planned wait, by wait id, oldest
	// first; strays are runs whose input names no planned wait.
	runs   map[int][]*soakRun
	agents map[string]*soakRun // agent invocations by workflow ID
	strays []*soakRun

	right           map[soakKind]int
	rightByProtocol map[string]int
	// excused are answers other than the planned one whose excuse the
	// evidence shows; excusedRuns the same of runs no client was answered
	// from. inProcess counts answers given in process by a probe loop or
	// pane watch whose attempt then ended before its run closed (a later
	// attempt closed it): only their outcome is compared with the run.
	excused, excusedRuns []string
	inProcess            []string
	// paneLosses counts the text waits that answered a pane error
	// excused by a death of the soak's tmux server.
	paneLosses int
	classes    map[string]*soakClass
	// cliEnds counts how the agent CLI's runs ended (its ends.log).
	cliEnds map[string]int
	// baselines are when each wait's pane watches read their baselines
	// (durawait's debug log over all its starts), by workflow ID, in
	// order.
	baselines map[string][]time.Time
	// replays are when a host answered a wait's loop with an end it had
	// told before a restart and found on disk (durawait's log), by
	// workflow ID, in order.
	replays map[string][]time.Time
}

// soakBaselineRead is durawait's debug line of a pane watch that has read
// its baseline (activities.PaneWatcher).
var soakBaselineRead = regexp.MustCompile(`time=(\S+) level=DEBUG msg="a pane watch read its baseline".*? workflow="?([^"\s]+)`)

// soakEndReplayed is durawait's line of a host that answered a loop with
// the end it had told before a restart (hosting's end files).
var soakEndReplayed = regexp.MustCompile(`time=(\S+) level=INFO msg="a loop's end was told before a restart and not recorded: answering with it".*? workflow="?([^"\s]+)`)

// readBaselines reads from durawait's log when each pane watch read its
// baseline and when a host replayed an end from its disk.
func (j *judge) readBaselines() {
	log := readFile(j.s.w.path("durawait.log"))
	j.baselines, j.replays = logTimes(soakBaselineRead, log), logTimes(soakEndReplayed, log)
}

// logTimes indexes the lines of log that re matches (its groups: the
// time, the workflow ID) by workflow ID.
func logTimes(re *regexp.Regexp, log string) map[string][]time.Time {
	times := map[string][]time.Time{}
	for _, m := range re.FindAllStringSubmatch(log, -1) {
		if at, err := time.Parse(time.RFC3339Nano, m[1]); err == nil {
			times[m[2]] = append(times[m[2]], at)
		}
	}
	return times
}

// answeringWatch is when the watch that gave run r's result began, and
// whether exactly so. That is the run's closing attempt, unless a host
// answered that attempt with an end it had told before a restart (a
// replay in durawait's log between the attempt and the close): then the
// watch was an earlier one, which began at some time after the run's
// start, and the baseline it read (the last in the log before the close)
// tells which text it had.
func (j *judge) answeringWatch(r *soakRun) (from time.Time, exact bool) {
	if r.attemptStart.IsZero() {
		return r.start, false
	}
	for _, at := range j.replays[r.id] {
		if !at.Before(r.attemptStart) && !at.After(r.closed) {
			return r.start, false
		}
	}
	// A loop the host resumed from its journal runs before the engine
	// hands its attempt to a worker, and may be the one that answers it:
	// a watch that read its baseline before the attempt began, with
	// durawait up from then to the attempt, may be the answering one.
	for _, b := range j.baselines[r.id] {
		if b.After(r.start) && b.Before(r.attemptStart) && (j.s == nil || len(j.s.downsDuring(b, r.attemptStart)) == 0) {
			return r.start, false
		}
	}
	return r.attemptStart, true
}

// lastBaseline is when the last pane watch of workflowID to read its
// baseline by at did so: the watch an answer given at at came from (a
// watch that starts again reads a new baseline); zero when the log has
// none.
func (j *judge) lastBaseline(workflowID string, at time.Time) time.Time {
	var last time.Time
	for _, b := range j.baselines[workflowID] {
		if !b.After(at) {
			last = b
		}
	}
	return last
}

// soakClass is one class of failed calls: whether the contract tells a
// client to retry it, how many, and the first example.
type soakClass struct {
	contract bool
	count    int
	example  string
}

func (j *judge) fail(rule string, sw *soakWait, format string, args ...any) {
	j.v.failures = append(j.v.failures, soakFailure{rule: rule, wait: sw, evidence: fmt.Sprintf(format, args...)})
}

// judge judges the run that just ended: the verdict and the report.
func (s *soak) judge() soakVerdict {
	wall := time.Since(s.began)
	j := &judge{s: s, tc: temporalClient(s.t, s.w.owner().Engine), right: map[soakKind]int{},
		rightByProtocol: map[string]int{}, classes: map[string]*soakClass{}, cliEnds: map[string]int{}}
	j.collectRuns()
	j.readBaselines()
	for _, sw := range s.snapshot() {
		j.judgeWait(sw)
	}
	for _, r := range j.strays {
		j.fail(ruleStrayRun, nil, "%s %s, input %s", r.id, r, shortText(r.input, 300))
	}
	j.judgeAgents()
	j.judgeFailures()
	for _, exit := range s.startExits {
		j.fail(ruleStartExit, nil, "its last log lines:\n    %s", exit)
	}
	// Waits 0-4 and 5-9 speak one era each, every planned outcome: both
	// eras must have carried waits to their right answer.
	if len(s.waits) >= len(soakProtocols)*int(soakKinds) {
		for _, p := range soakProtocols {
			if j.rightByProtocol[p] == 0 {
				j.fail(ruleProtocol, nil, "no wait of a client speaking %s finished right", p)
			}
		}
	}
	j.v.report = j.report(wall)
	return j.v
}

// snapshot is the planned waits, safe to range over while late clients
// still run.
func (s *soak) snapshot() []*soakWait {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.waits)
}

// --- The evidence of when durawait was down.

// longestUp is the longest stretch within [from, to] in which durawait was
// up and running: in no down stretch (kill to /healthz 200, SIGSTOP to
// SIGCONT).
func (s *soak) longestUp(from, to time.Time) time.Duration {
	longest := time.Duration(0)
	at := from
	for _, d := range s.sortedDowns() {
		if !d.to.After(at) {
			continue
		}
		if !d.from.Before(to) {
			break
		}
		if d.from.After(at) {
			longest = max(longest, d.from.Sub(at))
		}
		at = d.to
	}
	if to.After(at) {
		longest = max(longest, to.Sub(at))
	}
	return longest
}

func (s *soak) sortedDowns() []soakDown {
	downs := slices.Clone(s.downs)
	sort.Slice(downs, func(a, b int) bool { return downs[a].from.Before(downs[b].from) })
	return downs
}

// downsDuring are the down stretches that meet [from, to].
func (s *soak) downsDuring(from, to time.Time) []soakDown {
	var out []soakDown
	for _, d := range s.sortedDowns() {
		if d.from.Before(to) && d.to.After(from) {
			out = append(out, d)
		}
	}
	return out
}

// downNames lists the down stretches meeting [from, to], for evidence.
func (s *soak) downNames(from, to time.Time) string {
	var names []string
	for _, d := range s.downsDuring(from, to) {
		names = append(names, fmt.Sprintf("%s %s-%s", d.what, clock(d.from), clock(d.to)))
	}
	if len(names) == 0 {
		return "durawait was up and running throughout"
	}
	return "down: " + strings.Join(names, ", ")
}

// neverUp is an excuse's premise checked: no durawait was up and running
// at any moment of [from, to] (an empty stretch holds it).
func (s *soak) neverUp(from, to time.Time) bool {
	return !to.After(from) || s.longestUp(from, to) == 0
}

// noWorkerFor is the premise of "no worker ran it in time" checked for a
// run's watch activity over [from, to]: durawait was never up and running
// long enough for a lost attempt to be retried and to work (the larger of
// soakRecoveryTarget and two heartbeat timeouts and 2 s).
func (s *soak) noWorkerFor(r *soakRun, from, to time.Time) bool {
	return s.longestUp(from, to) < max(soakRecoveryTarget, 2*r.heartbeat+2*time.Second)
}

// --- The engine's record.

var (
	soakProbeInput = regexp.MustCompile(`probe/w([0-9]+)"`)
	soakTextInput  = regexp.MustCompile(`SOAK([0-9]+)Z`)
	soakEventInput = regexp.MustCompile(`"soak-ev-([0-9]+)"`)
)

// collectRuns reads every run of the three workflow types from the engine
// (visibility lists them, the history says what each did), waits for the
// runs still open to close, and files each under the planned wait its
// input names.
func (j *judge) collectRuns() {
	s := j.s
	byID := map[int]*soakWait{}
	agentWait := map[string]*soakWait{}
	for _, sw := range s.snapshot() {
		byID[sw.id] = sw
		sw.mu.Lock()
		if sw.invocation != "" {
			agentWait[sw.invocation] = sw
		}
		sw.mu.Unlock()
	}
	// Visibility trails the starts and closes a little: list until every
	// answered wait has a run, or the limit passes.
	var runs []*soakRun
	for deadline := time.Now().Add(30 * time.Second); ; {
		runs = j.listRuns()
		if j.everyAnsweredWaitListed(runs, agentWait) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	s.settleFrom = time.Now()
	j.runs, j.agents = map[int][]*soakRun{}, map[string]*soakRun{}
	for _, r := range runs {
		j.settle(r)
		j.readHistory(r)
		switch r.typ {
		case workflows.AgentWorkflowName:
			j.agents[r.id] = r
		default:
			id := -1
			pattern := soakProbeInput
			switch r.typ {
			case workflows.WaitForTextWorkflowName:
				pattern = soakTextInput
			case workflows.WaitForEventWorkflowName:
				pattern = soakEventInput
			}
			if m := pattern.FindStringSubmatch(r.input); m != nil {
				id = atoi(m[1])
			}
			if sw, ok := byID[id]; ok && soakFamily(sw.kind) == soakFamilyOfType[r.typ] {
				j.runs[id] = append(j.runs[id], r)
			} else {
				j.strays = append(j.strays, r)
			}
		}
	}
	for _, rs := range j.runs {
		sort.Slice(rs, func(a, b int) bool { return rs[a].start.Before(rs[b].start) })
	}
}

// soakFamilyOfType is the tool family of a wait's workflow type.
var soakFamilyOfType = map[string]string{
	workflows.WaitForWorkflowName: "wait_for", workflows.WaitForTextWorkflowName: "wait_for_text", workflows.AgentWorkflowName: "agent",
	workflows.WaitForEventWorkflowName: "wait_for_event",
}

// listRuns lists the runs of the soak's three workflow types.
func (j *judge) listRuns() []*soakRun {
	var out []*soakRun
	for _, typ := range []string{workflows.WaitForWorkflowName, workflows.WaitForTextWorkflowName, workflows.AgentWorkflowName, workflows.WaitForEventWorkflowName} {
		var token []byte
		for {
			resp, err := j.tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
				Query: fmt.Sprintf("WorkflowType = '%s'", typ), NextPageToken: token, PageSize: 1000,
			})
			if err != nil {
				j.s.t.Fatalf("soak judge: list %s runs: %v", typ, err)
			}
			for _, e := range resp.Executions {
				r := &soakRun{typ: typ, id: e.Execution.WorkflowId, runID: e.Execution.RunId, start: e.StartTime.AsTime(), status: e.Status}
				if p, ok := e.GetMemo().GetFields()["prompt"]; ok {
					_ = converter.GetDefaultDataConverter().FromPayload(p, &r.prompt)
				}
				out = append(out, r)
			}
			token = resp.NextPageToken
			if len(token) == 0 {
				break
			}
		}
	}
	return out
}

// everyAnsweredWaitListed reports whether runs hold a run for every wait
// whose client has its answer.
func (j *judge) everyAnsweredWaitListed(runs []*soakRun, agentWait map[string]*soakWait) bool {
	listed := map[string]bool{}
	for _, r := range runs {
		listed[r.id] = true
	}
	for id := range agentWait {
		if !listed[id] {
			return false
		}
	}
	// The runs of the other waits are told apart by their input, which
	// the list does not carry: count them instead.
	want := map[string]int{}
	typeOf := map[soakKind]string{kindMatch: workflows.WaitForWorkflowName, kindTimeout: workflows.WaitForWorkflowName,
		kindText: workflows.WaitForTextWorkflowName, kindEvent: workflows.WaitForEventWorkflowName}
	for _, sw := range j.s.snapshot() {
		if sw.done.Load() && sw.kind != kindAgentOK && sw.kind != kindAgentBlocked {
			want[typeOf[sw.kind]]++
		}
	}
	ids := map[string]map[string]bool{}
	for _, r := range runs {
		if ids[r.typ] == nil {
			ids[r.typ] = map[string]bool{}
		}
		ids[r.typ][r.id] = true
	}
	for typ, n := range want {
		if len(ids[typ]) < n {
			return false
		}
	}
	return true
}

// settle waits, up to openSettleLimit from when the judge began, for a run
// the list showed open to close (a long poll on its close event).
func (j *judge) settle(r *soakRun) {
	if r.status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), j.s.settleFrom.Add(openSettleLimit))
	defer cancel()
	it := j.tc.GetWorkflowHistory(ctx, r.id, r.runID, true, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	for it.HasNext() {
		if _, err := it.Next(); err != nil {
			break
		}
	}
}

// readHistory fills in what the run's history says: its input, its watch
// activity's last attempt and heartbeat timeout, how and when it closed;
// for a run still open, its pending activities.
func (j *judge) readHistory(r *soakRun) {
	it := j.tc.GetWorkflowHistory(context.Background(), r.id, r.runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	watch := map[int64]bool{}
	r.status = enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			j.s.t.Fatalf("soak judge: history of %s %s: %v", r.id, r.runID, err)
		}
		at := ev.GetEventTime().AsTime()
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			for _, p := range ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads() {
				r.input += string(p.GetData())
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := ev.GetActivityTaskScheduledEventAttributes()
			if name := a.GetActivityType().GetName(); name == workflows.PollProbeActivityName || name == workflows.WatchPaneActivityName {
				watch[ev.GetEventId()] = true
				r.heartbeat = a.GetHeartbeatTimeout().AsDuration()
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			// A started event without a request ID is the engine's own,
			// written with the completion of a task no worker took (a host
			// resumed the loop and answered it by ID first): it says
			// nothing of when the loop began, only that it was after the
			// run's start.
			a := ev.GetActivityTaskStartedEventAttributes()
			if watch[a.GetScheduledEventId()] && a.GetRequestId() != "" {
				r.attemptStart = at
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			r.closed, r.status = at, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
			for _, p := range ev.GetWorkflowExecutionCompletedEventAttributes().GetResult().GetPayloads() {
				r.result += string(p.GetData())
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
			f := ev.GetWorkflowExecutionFailedEventAttributes().GetFailure()
			r.closed, r.status = at, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED
			r.failure, r.failureType = f.GetMessage(), f.GetApplicationFailureInfo().GetType()
			if r.failureType == workflows.ErrTypeAgentFailed {
				// A failed agent's invocation: its final payload.
				if details := f.GetApplicationFailureInfo().GetDetails().GetPayloads(); len(details) > 0 {
					r.result = string(details[0].GetData())
				}
			}
			for c := f.GetCause(); c != nil; c = c.GetCause() {
				r.failure += "; cause: " + c.GetMessage()
				if typ := c.GetApplicationFailureInfo().GetType(); typ != "" {
					r.failure += " (" + typ + ")"
				}
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
			r.closed, r.status = at, enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
			r.closed, r.status = at, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
			r.closed, r.status = at, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED
			// A cancel_agent's invocation: its final payload (the first
			// detail; a marker follows it).
			if details := ev.GetWorkflowExecutionCanceledEventAttributes().GetDetails().GetPayloads(); len(details) > 0 {
				r.result = string(details[0].GetData())
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
			r.closed, r.status = at, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW
		}
	}
	if r.closed.IsZero() {
		if d, err := j.tc.DescribeWorkflowExecution(context.Background(), r.id, r.runID); err == nil {
			for _, a := range d.GetPendingActivities() {
				r.pending += fmt.Sprintf("; pending %s attempt %d %s, last heartbeat %s, last failure %q", a.GetActivityType().GetName(),
					a.GetAttempt(), a.GetState(), clock(a.GetLastHeartbeatTime().AsTime()), a.GetLastFailure().GetMessage())
			}
		}
	}
}

// --- Waits.

// judgeWait judges one planned wait: its answer, the run it came from, and
// every other run of it.
func (j *judge) judgeWait(sw *soakWait) {
	sw.mu.Lock()
	answer, answerAt := sw.answer, sw.answerAt
	sw.mu.Unlock()
	var runs []*soakRun
	switch sw.kind {
	case kindAgentOK, kindAgentBlocked:
		sw.mu.Lock()
		if r := j.agents[sw.invocation]; r != nil {
			runs = []*soakRun{r}
		}
		sw.mu.Unlock()
	default:
		runs = j.runs[sw.id]
	}
	if !sw.done.Load() {
		j.fail(ruleLost, sw, "no answer %s after the last kill\n  %s\n  client: %s", soakLostAfter, runLines(runs), sw.callLog())
		return
	}
	// The run it answered from is the last begun before the answer: a run
	// of a wait_for or wait_for_text ID is begun only by its client's
	// calls, one at a time, and none after its last.
	var from *soakRun
	for _, r := range runs {
		if !r.start.After(answerAt) {
			from = r
		}
	}
	if from == nil {
		j.fail(ruleNoRun, sw, "answered %s at %s, but the engine has no run of it begun by then\n  %s\n  client: %s",
			shortText(answer, 300), clock(answerAt), runLines(runs), sw.callLog())
		return
	}
	for _, r := range runs {
		if r.closed.IsZero() {
			j.fail(ruleOpenRun, sw, "still open %s after the judge began: %s\n  client: %s", openSettleLimit, r, sw.callLog())
		}
	}
	switch sw.kind {
	case kindMatch, kindTimeout:
		j.judgeWaitFor(sw, answer, from, runs)
	case kindText:
		j.judgeText(sw, answer, from, runs)
	case kindEvent:
		j.judgeEvent(sw, answer, from, runs)
	default:
		j.judgeAgent(sw, answer, from)
	}
}

// soakEventResult is wait_for_event's answer (and its workflow's result).
type soakEventResult struct {
	Reason string `json:"reason"`
	Event  *struct {
		Seq        int64           `json:"seq"`
		Payload    json.RawMessage `json:"payload"`
		Source     string          `json:"source"`
		DeliveryID string          `json:"delivery_id"`
	} `json:"event"`
	ElapsedSec float64 `json:"elapsed_sec"`
}

// judgeEvent judges a wait_for_event: the answer against the plan and
// against its run, and every other run against the plan.
func (j *judge) judgeEvent(sw *soakWait, answer string, from *soakRun, runs []*soakRun) {
	var got soakEventResult
	if err := json.Unmarshal([]byte(answer), &got); err != nil {
		j.fail(ruleWrongAnswer, sw, "undecodable answer %q%s", answer, j.evidence(sw, runs))
		return
	}
	var rec soakEventResult
	if from.status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED || json.Unmarshal([]byte(from.result), &rec) != nil {
		j.fail(ruleNotItsRun, sw, "answered %s, but its run did not complete with a result%s", shortText(answer, 300), j.evidence(sw, runs))
		return
	}
	if got.Reason != rec.Reason || (got.Event == nil) != (rec.Event == nil) || (got.Event != nil && got.Event.Seq != rec.Event.Seq) {
		j.fail(ruleNotItsRun, sw, "answered %s, its run completed with %s%s", shortText(answer, 300), shortText(from.result, 300), j.evidence(sw, runs))
	}
	switch problem, excuse := j.eventOutcome(sw, got, from); {
	case problem == "":
		j.right[sw.kind]++
		j.rightByProtocol[sw.protocol]++
	case excuse != "":
		j.excused = append(j.excused, fmt.Sprintf("wait %d (%s): %s: %s", sw.id, sw.kind, problem, excuse))
	default:
		j.fail(ruleWrongAnswer, sw, "%s%s", problem, j.evidence(sw, runs))
	}
	for _, r := range runs {
		if r == from {
			continue
		}
		var other soakEventResult
		switch {
		case r.status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			// ruleOpenRun
		case r.status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED || json.Unmarshal([]byte(r.result), &other) != nil:
			j.fail(ruleWrongRun, sw, "run %s ended %s%s", shortRun(r.runID), r.status, j.evidence(sw, runs))
		default:
			if problem, excuse := j.eventOutcome(sw, other, r); problem != "" && excuse == "" {
				j.fail(ruleWrongRun, sw, "run %s: %s%s", shortRun(r.runID), problem, j.evidence(sw, runs))
			}
		}
	}
}

// eventOutcome judges a wait_for_event result of run r against the plan:
// its own post (its payload, its delivery ID, from the hook), or a
// timeout only when the hook took no post from the flip (or the run's
// start) to the run's bound plus the answer margin.
func (j *judge) eventOutcome(sw *soakWait, res soakEventResult, r *soakRun) (problem, excuse string) {
	bound := r.start.Add(time.Duration(sw.maxWait) * time.Second)
	switch {
	case res.Reason == "posted" && res.Event != nil:
		var payload any
		if res.Event.Seq <= 0 || res.Event.Source != "hook" || res.Event.DeliveryID != sw.event() ||
			json.Unmarshal(res.Event.Payload, &payload) != nil || string(res.Event.Payload) != sw.payload() {
			return fmt.Sprintf("answered a post that is not its own: seq %d, source %s, delivery %q, payload %s",
				res.Event.Seq, res.Event.Source, res.Event.DeliveryID, res.Event.Payload), ""
		}
		if flip := nsTime(sw.flipAt.Load()); flip.IsZero() || (!r.closed.IsZero() && r.closed.Before(flip)) {
			return fmt.Sprintf("answered its post, but its run closed %s, before the flip %s", clock(r.closed), clock(flip)), ""
		}
		return "", ""
	case res.Reason == "timeout":
		posted := nsTime(sw.postedAt.Load())
		problem = fmt.Sprintf("answered timeout after %.1f s though the hook took its post at %s", res.ElapsedSec, clock(posted))
		switch {
		case posted.IsZero() || posted.After(bound.Add(soakAnswerMargin)):
			return problem, "the hook took its post only after the run's bound (" + j.s.downNames(maxTime(nsTime(sw.flipAt.Load()), r.start), bound.Add(soakAnswerMargin)) + ")"
		case j.s.neverUp(maxTime(posted, r.start), bound.Add(soakAnswerMargin)):
			return problem, "no durawait up and running from the post to the bound + 1 s (" + j.s.downNames(posted, bound.Add(soakAnswerMargin)) + ")"
		}
		return problem, ""
	}
	return fmt.Sprintf("want its post, got %s", res.Reason), ""
}

func runLines(runs []*soakRun) string {
	if len(runs) == 0 {
		return "no run in the engine"
	}
	var lines []string
	for _, r := range runs {
		lines = append(lines, r.String())
	}
	return strings.Join(lines, "\n  ")
}

// evidence is what a failure of sw quotes: the runs, the client's calls
// and when durawait was down between the first call and the answer.
func (j *judge) evidence(sw *soakWait, runs []*soakRun) string {
	sw.mu.Lock()
	at := sw.answerAt
	sw.mu.Unlock()
	if at.IsZero() {
		at = time.Now()
	}
	return fmt.Sprintf("\n  %s\n  flipped %s\n  client: %s\n  %s", runLines(runs), clock(nsTime(sw.flipAt.Load())), sw.callLog(),
		j.s.downNames(nsTime(sw.startedAt.Load()), at))
}

// exactFrom reports whether the answer given at answerAt is the run's own
// result: no later loop can have closed the run. Else the answer came in
// process from a loop that a kill or a stall ended before it could record
// it, and a later loop closed the run: the loop of a later attempt (the
// attempt that ended the run began after the answer), or, since loops run
// on hosts (docs/hosts.md), the same attempt's loop resumed by a host after
// the kill, which the evidence shows as durawait down between the answer
// and the run's close.
func (j *judge) exactFrom(r *soakRun, answerAt time.Time) bool {
	if !r.attemptStart.IsZero() && r.attemptStart.After(answerAt) {
		return false
	}
	return r.closed.IsZero() || len(j.s.downsDuring(answerAt, r.closed)) == 0
}

// judgeWaitFor judges a wait_for: the answer against the plan and against
// its run, and every other run against the plan.
func (j *judge) judgeWaitFor(sw *soakWait, answer string, from *soakRun, runs []*soakRun) {
	var got waitResult
	if err := json.Unmarshal([]byte(answer), &got); err != nil {
		j.fail(ruleWrongAnswer, sw, "undecodable answer %q%s", answer, j.evidence(sw, runs))
		return
	}
	exact := j.compareWaitFor(sw, got, from, runs)
	switch problem, excuse := j.waitForOutcome(sw, got, from); {
	case problem == "":
		j.right[sw.kind]++
		j.rightByProtocol[sw.protocol]++
	case excuse != "":
		j.excused = append(j.excused, fmt.Sprintf("wait %d (%s): %s: %s", sw.id, sw.kind, problem, excuse))
	default:
		j.fail(ruleWrongAnswer, sw, "%s%s", problem, j.evidence(sw, runs))
	}
	for _, r := range runs {
		if r == from && exact {
			continue // judged as the answer
		}
		j.judgeWaitForRun(sw, r, runs)
	}
}

// observedNothing reports whether a wait_for answer is a timeout whose loop
// knew no observation (it was resumed with none on record, and its
// downstream server stayed unreachable): a later loop that closed the run
// may know one, and the answers agree on the outcome.
func observedNothing(res waitResult) bool {
	return res.Reason == "timeout" && res.Samples == 0 && res.LastObservation == ""
}

// compareWaitFor holds the answer to the result of the run it came from,
// and reports whether it is that run's own result.
func (j *judge) compareWaitFor(sw *soakWait, got waitResult, from *soakRun, runs []*soakRun) bool {
	sw.mu.Lock()
	answerAt := sw.answerAt
	sw.mu.Unlock()
	var rec waitResult
	if from.status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED || json.Unmarshal([]byte(from.result), &rec) != nil {
		j.fail(ruleNotItsRun, sw, "answered %+v, but its run did not complete with a result%s", got, j.evidence(sw, runs))
		return false
	}
	exact := j.exactFrom(from, answerAt)
	switch {
	case exact && got != rec:
		j.fail(ruleNotItsRun, sw, "answered %+v, its run completed with %+v%s", got, rec, j.evidence(sw, runs))
	case !exact && (got.Reason != rec.Reason || got.Condition != rec.Condition || (got.LastObservation != rec.LastObservation && !observedNothing(got))):
		j.fail(ruleNotItsRun, sw, "answered %+v in process; the run, closed by a later loop, completed with %+v%s", got, rec, j.evidence(sw, runs))
	case !exact:
		j.inProcess = append(j.inProcess, fmt.Sprintf("wait %d (%s): answered %s/%d samples/%.1f s, its run closed by a later loop with %s/%d samples/%.1f s",
			sw.id, sw.kind, got.Reason, got.Samples, got.ElapsedSec, rec.Reason, rec.Samples, rec.ElapsedSec))
	}
	return exact
}

// judgeWaitForRun judges a run of a wait_for that no client answer is
// the result of.
func (j *judge) judgeWaitForRun(sw *soakWait, r *soakRun, runs []*soakRun) {
	switch r.status {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return // ruleOpenRun
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		var rec waitResult
		if err := json.Unmarshal([]byte(r.result), &rec); err != nil {
			j.fail(ruleWrongRun, sw, "undecodable result of %s%s", r, j.evidence(sw, runs))
			return
		}
		switch problem, excuse := j.waitForOutcome(sw, rec, r); {
		case problem == "":
		case excuse != "":
			j.excusedRuns = append(j.excusedRuns, fmt.Sprintf("wait %d (%s) run %s: %s: %s", sw.id, sw.kind, shortRun(r.runID), problem, excuse))
		default:
			j.fail(ruleWrongRun, sw, "run %s: %s%s", shortRun(r.runID), problem, j.evidence(sw, runs))
		}
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		// "no worker answered the probe loop ... within max_wait_sec +
		// 30 s": the contract's answer when no worker could run the loop
		// to its end; checked against when durawait was up from the
		// moment an answer was due (the flip, or the bound of a wait that
		// had not flipped by then: a loop running before it has nothing
		// to answer yet) to the bound and grace.
		bound := r.start.Add(time.Duration(sw.maxWait) * time.Second)
		due := bound
		if flip := nsTime(sw.flipAt.Load()); !flip.IsZero() && flip.Before(due) {
			due = maxTime(flip, r.start)
		}
		end := bound.Add(workflows.LoopGrace)
		if r.failureType == workflows.ErrTypeNoHost && j.s.noWorkerFor(r, due, end) {
			j.excusedRuns = append(j.excusedRuns, fmt.Sprintf("wait %d (%s) run %s: no host answered within its bound and grace; durawait up and running at most %s at a time from %s, when its answer was due",
				sw.id, sw.kind, shortRun(r.runID), j.s.longestUp(due, end).Round(time.Millisecond), clock(due)))
			return
		}
		j.fail(ruleWrongRun, sw, "run %s failed %s %q; durawait was up and running %s at a stretch from %s, when its answer was due, to its bound and grace%s",
			shortRun(r.runID), r.failureType, r.failure, j.s.longestUp(due, end).Round(time.Millisecond), clock(due), j.evidence(sw, runs))
	default:
		j.fail(ruleWrongRun, sw, "run %s ended %s%s", shortRun(r.runID), r.status, j.evidence(sw, runs))
	}
}

// waitForOutcome judges a wait_for result of run r against the plan: ""
// when it is the planned one; else the problem, and the excuse when the
// evidence shows its premise.
func (j *judge) waitForOutcome(sw *soakWait, res waitResult, r *soakRun) (problem, excuse string) {
	bound := r.start.Add(time.Duration(sw.maxWait) * time.Second)
	pending := fmt.Sprintf("pending %d", sw.id)
	ready := fmt.Sprintf("READY %d", sw.id)
	timedOut := res.Reason == "timeout" && res.ElapsedSec >= float64(sw.maxWait)-0.5 &&
		(res.LastObservation == pending || (res.Samples == 0 && res.LastObservation == ""))
	switch {
	case sw.kind == kindMatch && res.Reason == "matched" && res.Condition == "matches" && res.LastObservation == ready:
		if flip := nsTime(sw.flipAt.Load()); flip.IsZero() || (!r.closed.IsZero() && r.closed.Before(flip)) {
			return fmt.Sprintf("matched %q, but its run closed %s, before the flip %s", ready, clock(r.closed), clock(flip)), ""
		}
		return "", ""
	case sw.kind == kindMatch && timedOut:
		// The contract's answer only if no worker could sample after the
		// flip: no durawait up and running at any moment from the flip
		// (or the run's start) to the bound plus the answer margin.
		problem = fmt.Sprintf("answered timeout (%d samples, %.1f s) though its file said %q from %s", res.Samples, res.ElapsedSec, ready, clock(nsTime(sw.flipAt.Load())))
		from := maxTime(nsTime(sw.flipAt.Load()), r.start)
		if flip := nsTime(sw.flipAt.Load()); flip.IsZero() {
			from = bound.Add(soakAnswerMargin) // never flipped: the timeout is right for this run
		}
		if j.s.neverUp(from, bound.Add(soakAnswerMargin)) {
			if !from.Before(bound.Add(soakAnswerMargin)) {
				return problem, "flipped only after the run's bound"
			}
			return problem, fmt.Sprintf("no durawait up and running from %s to the bound + 1 s %s (%s)", clock(from), clock(bound.Add(soakAnswerMargin)),
				j.s.downNames(from, bound.Add(soakAnswerMargin)))
		}
		return problem + fmt.Sprintf("; durawait was up and running %s at a stretch between %s and the bound + 1 s %s (%s)",
			j.s.longestUp(from, bound.Add(soakAnswerMargin)).Round(time.Millisecond), clock(from), clock(bound.Add(soakAnswerMargin)),
			j.s.downNames(from, bound.Add(soakAnswerMargin))), ""
	case sw.kind == kindTimeout && timedOut:
		// A loop answers by its bound + 1 s; later, only Temporal's
		// timeout of a loop whose attempt was lost near the bound and not
		// resumed before it (the last heartbeat's answer).
		if res.ElapsedSec <= float64(sw.maxWait)+soakAnswerMargin.Seconds() {
			return "", ""
		}
		problem = fmt.Sprintf("answered timeout after %.1f s, past max_wait_sec %d + 1 s", res.ElapsedSec, sw.maxWait)
		// Its premise: durawait was down within a recovery's time of
		// the bound + 1 s, so no resumed attempt could answer by then.
		near := bound.Add(soakAnswerMargin - max(soakRecoveryTarget, 2*r.heartbeat+2*time.Second))
		if len(j.s.downsDuring(near, bound.Add(soakAnswerMargin))) > 0 {
			return problem, "its loop was lost near the bound (" + j.s.downNames(near, bound.Add(soakAnswerMargin)) + ")"
		}
		return problem + "; durawait was up and running from " + clock(near) + " to the bound + 1 s", ""
	case sw.kind == kindMatch:
		return fmt.Sprintf("want matched on %q, got %+v", ready, res), ""
	default:
		return fmt.Sprintf("want timeout after %d s on %q, got %+v", sw.maxWait, pending, res), ""
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// textOutcome is wait_for_text's workflow result and its answer: the
// result variant or the error variant.
type textOutcome struct {
	Result *textResult `json:"result"`
	Error  *struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Retryable bool   `json:"retryable"`
	} `json:"error"`
}

// judgeText judges a wait_for_text: the answer against the plan, the pane
// and its run, and every other run against the plan and the pane.
func (j *judge) judgeText(sw *soakWait, answer string, from *soakRun, runs []*soakRun) {
	sw.mu.Lock()
	answerAt := sw.answerAt
	sw.mu.Unlock()
	var got textResult
	if err := json.Unmarshal([]byte(answer), &got); err != nil {
		j.fail(ruleWrongAnswer, sw, "undecodable answer %q%s", answer, j.evidence(sw, runs))
		return
	}
	if got.Error != nil {
		// Only a pane that died with the soak's tmux server answers an
		// error; every run is judged as no answer came from it.
		excuse := j.s.paneLost(sw, workflows.TextErrorCode(got.Error.Code), answerAt)
		if excuse == "" {
			j.fail(ruleWrongAnswer, sw, "answered the error %s %q%s", got.Error.Code, got.Error.Message, j.evidence(sw, runs))
			return
		}
		j.excused = append(j.excused, fmt.Sprintf("wait %d (%s): answered %s: %s", sw.id, sw.kind, got.Error.Code, excuse))
		j.paneLosses++
		for _, r := range runs {
			j.judgeTextRun(sw, r, runs)
		}
		return
	}
	exact := j.exactFrom(from, answerAt)
	var rec textOutcome
	switch {
	case from.status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED || json.Unmarshal([]byte(from.result), &rec) != nil || rec.Result == nil:
		j.fail(ruleNotItsRun, sw, "answered %s, but its run did not complete with a result%s", shortText(answer, 300), j.evidence(sw, runs))
	case exact && *rec.Result != got:
		j.fail(ruleNotItsRun, sw, "answered %s, its run completed with %s%s", shortText(answer, 300), shortText(from.result, 300), j.evidence(sw, runs))
	case !exact && (rec.Result.Matched != got.Matched || rec.Result.Text != got.Text):
		j.fail(ruleNotItsRun, sw, "answered %s in process; the run, closed by a later loop, completed with %s%s",
			shortText(answer, 300), shortText(from.result, 300), j.evidence(sw, runs))
	case !exact:
		j.inProcess = append(j.inProcess, fmt.Sprintf("wait %d (%s): answered matched from %s, its run closed by a later loop from %s",
			sw.id, sw.kind, got.Source, rec.Result.Source))
	}
	// The watch the answer came from is its run's (answeringWatch) when
	// the answer is that run's own result; else one that began at some
	// time after the run's start.
	watchFrom, exactWatch := from.start, false
	if exact {
		watchFrom, exactWatch = j.answeringWatch(from)
	}
	switch problem, excuse := j.textOutcome(sw, got, watchFrom, exactWatch, from, answerAt); {
	case problem == "":
		j.right[sw.kind]++
		j.rightByProtocol[sw.protocol]++
	case excuse != "":
		j.excused = append(j.excused, fmt.Sprintf("wait %d (%s): %s: %s", sw.id, sw.kind, problem, excuse))
	default:
		j.fail(ruleWrongAnswer, sw, "%s%s", problem, j.evidence(sw, runs))
	}
	for _, r := range runs {
		if r == from && exact {
			continue
		}
		j.judgeTextRun(sw, r, runs)
	}
}

// judgeTextRun judges a run of a wait_for_text that no client answer is
// the result of.
func (j *judge) judgeTextRun(sw *soakWait, r *soakRun, runs []*soakRun) {
	if r.status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return // ruleOpenRun
	}
	var rec textOutcome
	if r.status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED || json.Unmarshal([]byte(r.result), &rec) != nil {
		j.fail(ruleWrongRun, sw, "run %s ended %s without a result%s", shortRun(r.runID), r.status, j.evidence(sw, runs))
		return
	}
	if rec.Error != nil {
		if excuse := j.s.paneLost(sw, workflows.TextErrorCode(rec.Error.Code), r.closed); excuse != "" {
			j.excusedRuns = append(j.excusedRuns, fmt.Sprintf("wait %d (%s) run %s: %s: %s", sw.id, sw.kind, shortRun(r.runID), rec.Error.Code, excuse))
			return
		}
		// tmux_unavailable, "no worker on the tmux host ... watched pane
		// ... within the bound": the contract's answer when no worker
		// could watch; checked against when durawait was up.
		bound := r.start.Add(j.textMaxWait(r))
		if rec.Error.Code == string(workflows.TextErrTmuxUnavailable) && rec.Error.Retryable && j.s.noWorkerFor(r, r.start, bound) {
			j.excusedRuns = append(j.excusedRuns, fmt.Sprintf("wait %d (%s) run %s: tmux_unavailable; durawait up and running at most %s at a time in its bound",
				sw.id, sw.kind, shortRun(r.runID), j.s.longestUp(r.start, bound).Round(time.Millisecond)))
			return
		}
		j.fail(ruleWrongRun, sw, "run %s answered the error %s %q; durawait was up and running %s at a stretch within its bound%s",
			shortRun(r.runID), rec.Error.Code, rec.Error.Message, j.s.longestUp(r.start, bound).Round(time.Millisecond), j.evidence(sw, runs))
		return
	}
	watchFrom, exact := j.answeringWatch(r)
	switch problem, excuse := j.textOutcome(sw, *rec.Result, watchFrom, exact, r, r.closed); {
	case problem == "":
	case excuse != "":
		j.excusedRuns = append(j.excusedRuns, fmt.Sprintf("wait %d (%s) run %s: %s: %s", sw.id, sw.kind, shortRun(r.runID), problem, excuse))
	default:
		j.fail(ruleWrongRun, sw, "run %s: %s%s", shortRun(r.runID), problem, j.evidence(sw, runs))
	}
}

// textMaxWait is a wait_for_text run's bound, from its input.
func (j *judge) textMaxWait(r *soakRun) time.Duration {
	var in struct {
		MaxWait time.Duration `json:"max_wait"`
	}
	_ = json.Unmarshal([]byte(r.input), &in)
	return in.MaxWait
}

// textOutcome judges a wait_for_text result against the plan and the
// pane: matched on its text, not before the text was typed, with the
// source that fits when the text was printed relative to the watch the
// result came from (which began at watchFrom: exactly so when exact, at
// or after it otherwise). Text printed before the watch began is in its
// baseline; text typed after the answering watch read its baseline (its
// line in durawait's log, the last for the wait by the answer at at) is in
// its output. Without that line, text printed after the watch began and
// soakBaselineSlack is in its output, unless durawait went down between,
// which starts the watch again with a new baseline.
func (j *judge) textOutcome(sw *soakWait, res textResult, watchFrom time.Time, exact bool, r *soakRun, at time.Time) (problem, excuse string) {
	typed, appeared := nsTime(sw.flipAt.Load()), nsTime(sw.appearedAt.Load())
	baselineAt := j.lastBaseline(r.id, at)
	switch {
	case res.Text != sw.text():
		return fmt.Sprintf("answered for the text %q, want %q", res.Text, sw.text()), ""
	case !res.Matched:
		bound := r.start.Add(j.textMaxWait(r))
		problem = fmt.Sprintf("answered matched: false, though %q was printed at %s", sw.text(), clock(typed))
		if from := maxTime(typed, r.start); !typed.IsZero() && j.s.neverUp(from, bound.Add(soakAnswerMargin)) {
			return problem, fmt.Sprintf("no durawait up and running from %s to the bound + 1 s", clock(from))
		}
		return problem, ""
	case typed.IsZero():
		return fmt.Sprintf("matched %q, which was never printed", sw.text()), ""
	case !at.After(typed):
		return fmt.Sprintf("matched at %s, before %q was typed at %s", clock(at), sw.text(), clock(typed)), ""
	case appeared.IsZero():
		problem = fmt.Sprintf("matched %q, which the soak never saw in the pane", sw.text())
		sw.mu.Lock()
		target := sw.target
		sw.mu.Unlock()
		if lastAlive, died, gone := j.s.paneGone(target); gone && died.After(typed) {
			// Typed while the server ran; it died before the soak saw it.
			return problem, fmt.Sprintf("typed at %s, its pane's tmux server died between %s and %s", clock(typed), clock(lastAlive), clock(died))
		}
		return problem, ""
	case appeared.Before(watchFrom) && res.Source != "baseline":
		return fmt.Sprintf("source %q, but the text was in the pane (%s) before the watch began (%s): want baseline", res.Source, clock(appeared), clock(watchFrom)), ""
	case !baselineAt.IsZero() && typed.After(baselineAt) && res.Source != "output":
		return fmt.Sprintf("source %q, but the text was typed (%s) after the watch that answered read its baseline (%s, durawait's log): want output", res.Source, clock(typed), clock(baselineAt)), ""
	case baselineAt.IsZero() && exact && typed.After(watchFrom.Add(soakBaselineSlack)) && len(j.s.downsDuring(watchFrom, typed)) == 0 && res.Source != "output":
		return fmt.Sprintf("source %q, but the text was typed (%s) after its watch began (%s) and its baseline was read: want output", res.Source, clock(typed), clock(watchFrom)), ""
	case res.Source != "baseline" && res.Source != "output":
		return fmt.Sprintf("source %q", res.Source), ""
	}
	return "", ""
}

// judgeAgent judges an agent wait's answer against the plan and its
// invocation's result.
func (j *judge) judgeAgent(sw *soakWait, answer string, r *soakRun) {
	var got, rec payload
	if err := json.Unmarshal([]byte(answer), &got); err != nil {
		j.fail(ruleWrongAnswer, sw, "undecodable answer %q%s", answer, j.evidence(sw, []*soakRun{r}))
		return
	}
	code := func(p payload) string {
		if p.Error == nil {
			return ""
		}
		return p.Error.Code
	}
	switch {
	case !closedWithPayload(r) || json.Unmarshal([]byte(r.result), &rec) != nil:
		j.fail(ruleNotItsRun, sw, "answered %s, but its invocation did not close with a result%s", shortText(answer, 300), j.evidence(sw, []*soakRun{r}))
	case got.Status != rec.Status || got.output() != rec.output() || code(got) != code(rec):
		j.fail(ruleNotItsRun, sw, "answered %s, its invocation completed with %s%s", shortText(answer, 300), shortText(r.result, 300), j.evidence(sw, []*soakRun{r}))
	}
	want := fmt.Sprintf("done %d", sw.id)
	switch {
	case sw.kind == kindAgentOK && (got.Status != "succeeded" || got.output() != want):
		j.fail(ruleWrongAnswer, sw, "want succeeded with %q, got %s%s", want, shortText(answer, 500), j.evidence(sw, []*soakRun{r}))
	case sw.kind == kindAgentBlocked && (got.Status != "blocked" || code(got) != "auth_failed"):
		j.fail(ruleWrongAnswer, sw, "want blocked with auth_failed, got %s%s", shortText(answer, 500), j.evidence(sw, []*soakRun{r}))
	default:
		j.right[sw.kind]++
		j.rightByProtocol[sw.protocol]++
	}
}

// judgeAgents holds every agent wait to one invocation and one run of its
// CLI, which ended on its own: the fake CLI's records (argv.log, ends.log)
// and the engine's invocations by prompt.
func (j *judge) judgeAgents() {
	cliRuns, ends := map[string]int{}, map[string][]string{}
	for _, line := range strings.Split(readFile(j.s.w.path("argv.log")), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			cliRuns[f[len(f)-1]]++
		}
	}
	for _, line := range strings.Split(readFile(j.s.w.path("ends.log")), "\n") {
		if name, how, ok := strings.Cut(line, " "); ok {
			ends[name] = append(ends[name], how)
		}
	}
	invocations := map[string]int{}
	for _, r := range j.agents {
		invocations[r.prompt]++
	}
	for _, sw := range j.s.snapshot() {
		if sw.kind != kindAgentOK && sw.kind != kindAgentBlocked {
			continue
		}
		p := sw.prompt()
		// None twice; a wait whose CLI never ran is already wrong (its
		// planned output is missing).
		if invocations[p] > 1 || cliRuns[p] > 1 {
			j.fail(ruleTwice, sw, "%d invocations with prompt %s and %d runs of its CLI, want one of each", invocations[p], p, cliRuns[p])
		}
		// Its CLI must have ended on its own, as planned: a run killed by
		// SIGTERM (durawait's stop of a run) records the signal, one
		// killed by SIGKILL records nothing.
		want := map[soakKind]string{kindAgentOK: "exit 0", kindAgentBlocked: "exit 1"}[sw.kind]
		for _, how := range ends[p] {
			j.cliEnds[how]++
			if how != want {
				j.fail(ruleCLIKilled, sw, "its CLI (prompt %s) ended by %q, want %q%s", p, how, want, j.evidence(sw, nil))
			}
		}
		if cliRuns[p] > len(ends[p]) && sw.done.Load() {
			j.cliEnds["no end recorded (SIGKILL?)"]++
			j.fail(ruleCLIKilled, sw, "%d runs of its CLI (prompt %s), %d ends recorded: a run died without a word (SIGKILL?)%s",
				cliRuns[p], p, len(ends[p]), j.evidence(sw, nil))
		}
	}
}

// --- Failed calls.

// judgeFailures sorts every failed call into its class; each class the
// contract does not tell a client to retry fails the run, once, with its
// count and first example.
func (j *judge) judgeFailures() {
	j.s.mu.Lock()
	failures := slices.Clone(j.s.failures)
	j.s.mu.Unlock()
	for _, f := range failures {
		name, contract := j.classify(f)
		c := j.classes[name]
		if c == nil {
			c = &soakClass{contract: contract}
			j.classes[name] = c
			c.example = fmt.Sprintf("wait %d %s sent %s, failed %s (connection made %s): %s; %s", f.wait.id, f.tool, clock(f.sent), clock(f.failed),
				clock(f.conn), shortText(f.msg, 400), j.s.downNames(f.conn.Add(-time.Second), f.failed.Add(time.Second)))
		}
		c.count++
	}
	for _, name := range sortedKeys(j.classes) {
		if c := j.classes[name]; !c.contract {
			j.fail(ruleNonContract, nil, "%d x %s; first: %s", c.count, name, c.example)
		}
	}
}

// Messages of the failures a kill or a stall causes, by class.
var (
	// The connection broke or could not be made: the process died (EOF,
	// reset, refused, broken pipe), or was stopped (a client's own
	// deadline on initialize ran out).
	soakCutOff = regexp.MustCompile(`EOF|connection reset|connection refused|broken pipe|server closed|use of closed network connection|context deadline exceeded|Client.Timeout`)
	// The session of a 2025-11-25 client belonged to a process that died.
	soakSessionLost = regexp.MustCompile(`\(404\)|status 404|404 Not Found|[Ss]ession not found|session terminated`)
	// The front end was not in place yet (clients.md: the start-up hold).
	soakStarting = regexp.MustCompile(`\b503\b|Service Unavailable|durawait is starting`)
	// The official Go SDK fell back to 2025-11-25 after a server/discover
	// a kill cut off (clients.md, Limits): the soak's client refuses the
	// downgraded session and connects again.
	soakDowngrade = regexp.MustCompile(`negotiated 2025-11-25, want 2026-07-28`)
)

// classify names the class of a failed call and whether the contract
// tells a client to retry it, checking the class's premise against the
// record of when durawait was down. Every class allowed here is written
// down in durawait's documentation as an answer to call again.
func (j *judge) classify(f soakCallFailure) (string, bool) {
	s := j.s
	overlaps := func(from time.Time) bool { return len(s.downsDuring(from, f.failed)) > 0 }
	if f.isError {
		switch {
		case strings.Contains(f.msg, "no worker answered the probe loop"):
			// wait_for.md: a loop no worker answered by its bound and
			// grace ends with this error (NoHost). The engine has the run that failed so,
			// and the judge holds that run to the premise
			// (judgeWaitForRun), so the answer itself is the contract's.
			return "wait_for isError: no host answered within the bound and grace (its run is judged)", true
		case f.tool == "wait_for_text" && strings.Contains(f.msg, `"tmux_unavailable"`) && strings.Contains(f.msg, `"retryable":true`) &&
			strings.Contains(f.msg, "within the bound"):
			// tmux.md: tmux_unavailable is retryable; this one is a
			// run's outcome ("no worker ... watched pane ... within the
			// bound"), which judgeTextRun holds to its premise.
			return "wait_for_text isError: tmux_unavailable, no worker watched within the bound (its run is judged)", true
		case f.tool == "wait_for_text" && s.paneLost(f.wait, textErrorCode(f.msg), f.failed) != "":
			// The pane died with the soak's tmux server (soak_tmux_test.go):
			// the wait's client takes this answer as its last.
			return fmt.Sprintf("wait_for_text isError: %s, its pane died with the soak's tmux server", textErrorCode(f.msg)), true
		case f.tool == "start_agent" && strings.Contains(f.msg, "call again with the same request_id"):
			// agents.md, limits.md: an overloaded start_agent answers
			// "call again with the same request_id".
			return "start_agent isError: overloaded, call again with the same request_id", true
		case f.tool == "wait_agent" && strings.Contains(f.msg, "the invocation is running but did not answer; call again") && overlaps(f.sent):
			// durawait's own "call again" when the wait update could not
			// be answered (its Temporal call failed), here because the
			// process was killed or stopped while the call was in
			// flight. Not written in agents.md; allowed only when the call
			// met a kill or stall.
			return "wait_agent isError: running but did not answer, call again (the call met a kill or stall; not in agents.md)", true
		case strings.Contains(f.msg, "durawait is shutting down") && overlaps(f.sent):
			// operations.md: a draining durawait answers "call again
			// with the same arguments"; only a process going down drains.
			return "isError: durawait is shutting down, call again (while it went down)", true
		}
		return fmt.Sprintf("%s isError while durawait was up: %s", f.tool, soakMessage(f.msg)), false
	}
	switch {
	case soakSessionLost.MatchString(f.msg) && overlaps(f.conn):
		// clients.md, operations.md: a 2025-11-25 session does not
		// outlive the process; the client initializes again.
		return f.tool + ": session lost with the process that made it (404)", true
	case soakStarting.MatchString(f.msg) && overlaps(f.sent):
		// clients.md: 503 "durawait is starting; call again in a moment"
		// while the front end is not in place.
		return f.tool + ": 503 durawait is starting", true
	case soakDowngrade.MatchString(f.msg) && overlaps(f.sent):
		return f.tool + ": the Go SDK fell back to 2025-11-25 after a discover the kill cut off", true
	case soakCutOff.MatchString(f.msg) && overlaps(f.conn):
		// README, operations.md: a call cut off by a crash (or a
		// connection made to a process that then died or was stopped) is
		// called again with the same arguments.
		return f.tool + ": cut off by a kill or stall (EOF, reset, refused, deadline)", true
	}
	return fmt.Sprintf("%s failed while durawait was up: %s", f.tool, soakMessage(f.msg)), false
}

// --- The report.

func (j *judge) report(wall time.Duration) string {
	s := j.s
	var b strings.Builder
	fmt.Fprintf(&b, "soak report (seed %d)\n", s.knobs.seed)
	fmt.Fprintf(&b, "  N (waits in flight)         %d\n", s.knobs.waits)
	fmt.Fprintf(&b, "  M (kills of durawait)       %d of %d", s.killsDone, s.knobs.kills)
	if s.budgetHit {
		fmt.Fprintf(&b, " (DURAWAIT_SOAK_BUDGET %s reached)", s.knobs.budget)
	}
	b.WriteString("\n")
	for _, k := range sortedKeys(s.killsByKind) {
		fmt.Fprintf(&b, "    %-44s %d\n", k, s.killsByKind[k])
	}
	fmt.Fprintf(&b, "  mid-start: first calls in flight at the kill  p50 %d, max %d\n", p50i(s.midStartInFlight), maxi(s.midStartInFlight))
	fmt.Fprintf(&b, "  mid-result: flipped waits undelivered at the kill  p50 %d, max %d\n", p50i(s.midResultPending), maxi(s.midResultPending))
	fmt.Fprintf(&b, "  downstream probe server kills %d\n", s.downstreamKills)
	fmt.Fprintf(&b, "  stalls (SIGSTOP, then SIGCONT) %d of %d\n", len(s.stalls), len(s.knobs.stalls))
	s.reportTmux(&b, j.paneLosses)
	j.reportStalls(&b)
	fmt.Fprintf(&b, "  start_agent calls answered when repeated with their request_id after a failed call %d\n", s.startsRepeated)
	fmt.Fprintf(&b, "  agent CLI runs ended (the fake CLI's record):")
	for _, how := range sortedKeys(j.cliEnds) {
		fmt.Fprintf(&b, " %s %d;", how, j.cliEnds[how])
	}
	b.WriteString("\n")
	total := 0
	for k := soakKind(0); k < soakKinds; k++ {
		fmt.Fprintf(&b, "  right: %-22s %d\n", k, j.right[k])
		total += j.right[k]
	}
	fmt.Fprintf(&b, "  waits planned %d, right %d, excused %d (not right: the answer was not the planned one; the evidence shows why)\n",
		len(s.waits), total, len(j.excused))
	for _, e := range j.excused {
		fmt.Fprintf(&b, "    excused: %s\n", e)
	}
	fmt.Fprintf(&b, "  right by protocol: %s %d (mcp-go, sessions), %s %d (official Go SDK, stateless)\n",
		soakProtocols[0], j.rightByProtocol[soakProtocols[0]], soakProtocols[1], j.rightByProtocol[soakProtocols[1]])
	byRule := map[string]int{}
	for _, f := range j.v.failures {
		byRule[f.rule]++
	}
	fmt.Fprintf(&b, "  failures %d:", len(j.v.failures))
	for _, r := range sortedKeys(byRule) {
		fmt.Fprintf(&b, " %s %d;", r, byRule[r])
	}
	b.WriteString("\n")
	runs, extra := 0, map[string]int{}
	for _, rs := range j.runs {
		runs += len(rs)
		if len(rs) > 1 {
			extra[rs[0].typ] += len(rs) - 1
		}
	}
	fmt.Fprintf(&b, "  runs of wait_for and wait_for_text: %d; more than one per wait (an identical call after a close whose answer a kill cut off starts anew): WaitFor %d, WaitForText %d\n",
		runs, extra[workflows.WaitForWorkflowName], extra[workflows.WaitForTextWorkflowName])
	fmt.Fprintf(&b, "  runs no answer came from, excused by the evidence %d\n", len(j.excusedRuns))
	for _, e := range j.excusedRuns {
		fmt.Fprintf(&b, "    %s\n", e)
	}
	fmt.Fprintf(&b, "  answers given in process by a loop that then ended, the run closed by a later one (outcome compared) %d\n", len(j.inProcess))
	for i, e := range j.inProcess {
		if i == 5 {
			fmt.Fprintf(&b, "    … %d more\n", len(j.inProcess)-5)
			break
		}
		fmt.Fprintf(&b, "    %s\n", e)
	}
	reads := 0
	for _, at := range j.baselines {
		reads += len(at)
	}
	fmt.Fprintf(&b, "  pane watches' baselines read (durawait's log, the text waits' evidence) %d, of %d waits\n", reads, len(j.baselines))
	fmt.Fprintf(&b, "  wall time %s\n", wall.Round(time.Second))
	fmt.Fprintf(&b, "  restart -> /healthz 200  p50 %s, max %s (%d starts)\n", p50d(s.healthz), maxd(s.healthz), len(s.healthz))
	fmt.Fprintf(&b, "  kill -> probes sampling again  p50 %s, max %s (%d measured; %d kills came before sampling resumed)\n",
		p50d(s.recovery), maxd(s.recovery), len(s.recovery), s.notRecovered)
	fmt.Fprintf(&b, "  durawait exits during start-up %d\n", len(s.startExits))
	b.WriteString("  client call failures by class (c: the contract's, retried; X: not the contract's, a failure):\n")
	names := sortedKeys(j.classes)
	sort.SliceStable(names, func(a, c int) bool { return j.classes[names[a]].count > j.classes[names[c]].count })
	for _, name := range names {
		mark := "c"
		if !j.classes[name].contract {
			mark = "X"
		}
		fmt.Fprintf(&b, "    %s %6d  %s\n", mark, j.classes[name].count, name)
	}
	b.WriteString("  client call failures by message:\n")
	errKeys := sortedKeys(s.errs)
	sort.SliceStable(errKeys, func(a, c int) bool { return s.errs[errKeys[a]] > s.errs[errKeys[c]] })
	for i, k := range errKeys {
		if i == 20 {
			fmt.Fprintf(&b, "    … %d more messages\n", len(errKeys)-20)
			break
		}
		fmt.Fprintf(&b, "    %6d  %s\n", s.errs[k], k)
	}
	return b.String()
}

// reportStalls writes, for each stall length, the waits whose answer came
// due while durawait was stopped (flipped then, or a timeout's bound then)
// and how long after the SIGCONT their answers came.
func (j *judge) reportStalls(b *strings.Builder) {
	s := j.s
	late := soakPollSec*time.Second + time.Second
	byLen := map[time.Duration][]time.Duration{}
	var order []time.Duration
	for _, st := range s.stalls {
		if _, ok := byLen[st.d]; !ok {
			order = append(order, st.d)
			byLen[st.d] = nil
		}
		for _, sw := range s.snapshot() {
			due := nsTime(sw.flipAt.Load())
			if sw.kind == kindTimeout {
				if rs := j.runs[sw.id]; len(rs) > 0 {
					due = rs[len(rs)-1].start.Add(time.Duration(sw.maxWait) * time.Second)
				}
			}
			sw.mu.Lock()
			at := sw.answerAt
			sw.mu.Unlock()
			if due.Before(st.from) || due.After(st.to) || at.IsZero() {
				continue
			}
			byLen[st.d] = append(byLen[st.d], max(0, at.Sub(st.to)))
		}
		fmt.Fprintf(b, "    stall %s at %s-%s: open then %v, %d flipped by the stall\n", st.d, clock(st.from), clock(st.to), st.open, st.flipped)
	}
	for _, d := range order {
		lat := byLen[d]
		over := 0
		for _, l := range lat {
			if l > late {
				over++
			}
		}
		fmt.Fprintf(b, "    stalls of %s: %d answers due during them; SIGCONT -> answer p50 %s, p99 %s, max %s; %d later than poll_sec + 1 s\n",
			d, len(lat), p50d(lat), p99d(lat), maxd(lat), over)
	}
}

func p99d(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*99/100)].Round(time.Millisecond)
}

// closedWithPayload reports whether an agent invocation's run closed with
// its final payload: Completed (succeeded, blocked), Failed as a failed
// agent, or Canceled by cancel_agent (workflows.InvocationFromError).
func closedWithPayload(r *soakRun) bool {
	switch r.status {
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return true
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		return r.failureType == workflows.ErrTypeAgentFailed
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return r.result != ""
	}
	return false
}
