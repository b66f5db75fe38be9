package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/durawait/durawait/workflows"
)

// replayDir is where the replay test (workflows/replay_test.go) reads the
// recorded histories.
const replayDir = "../../workflows/testdata/replay"

// TestRecordReplayHistories runs each scenario of each workflow type through
// the real binary (its embedded engine, the real activities, the demo probe,
// the fake agent CLI, a real tmux server), including the crash of durawait,
// the loss of an agent's CLI, a run past max_run_sec, an invocation no host
// claims, an operator's cancel of a wait and of an agent with a call in
// flight, a front's call of a re-exposed tool, and the catalog and host
// lease workflows, and writes every history into workflows/testdata/replay
// as JSON, for TestReplayRecordedHistories.
//
// It is skipped unless DURAWAIT_RECORD_REPLAY names the release's file
// prefix. A release records its own histories once, before it ships, and
// commits them beside the earlier releases' that still replay (see
// docs/operations.md, "Upgrading"):
//
//	DURAWAIT_RECORD_REPLAY=v7_ go test -count=1 -run '^TestRecordReplayHistories$' -v ./internal/e2e/
func TestRecordReplayHistories(t *testing.T) {
	prefix := os.Getenv("DURAWAIT_RECORD_REPLAY")
	if prefix == "" {
		t.Skip("DURAWAIT_RECORD_REPLAY is not set (set it to the release's file prefix, e.g. v4_, to record)")
	}
	t.Run("wait_for and agents", func(t *testing.T) { recordWaitsAndAgents(t, prefix) })
	t.Run("tmux", func(t *testing.T) { recordTmux(t, prefix) })
	t.Run("max_run", func(t *testing.T) { recordMaxRun(t, prefix) })
	t.Run("unclaimed", func(t *testing.T) { recordUnclaimed(t, prefix) })
	t.Run("answered", func(t *testing.T) { recordAnswered(t, prefix) })
	t.Run("events", func(t *testing.T) { recordEvents(t, prefix) })
}

// recordEvents records an event's latch from its first post to its end
// (its posts outlived the retention), a wait_for_event a post ended and one
// that timed out, and a wait_for its wake-up event woke.
func recordEvents(t *testing.T, prefix string) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfigWith("[events]\nretention_sec = 3", w.demoServer("demo")))
	c := inst.client(t)
	engine := w.owner().Engine
	tc := temporalClient(t, engine)
	rec := newRecorder(t, prefix)

	first := c.postEvent(t, map[string]any{"name": "recorded", "payload": map[string]any{"n": 1}, "delivery_id": "r-1"})
	posted := c.waitEvent(t, map[string]any{"name": "recorded"})
	require.Equal(t, "posted", posted.Reason)
	c.postEvent(t, map[string]any{"name": "recorded", "payload": map[string]any{"n": 1}, "delivery_id": "r-1"})
	rec.byInput(engine, workflows.WaitForEventWorkflowName, "eventwait_posted", `"name":"recorded"`)
	timedOut := c.waitEvent(t, map[string]any{"name": "recorded", "after_seq": first.Seq, "max_wait_sec": 1})
	require.Equal(t, "timeout", timedOut.Reason)
	rec.byInput(engine, workflows.WaitForEventWorkflowName, "eventwait_timeout", fmt.Sprintf(`"after_seq":%d`, first.Seq))

	w.write("woken", "pending")
	woken := make(chan waitResult, 1)
	go func() {
		woken <- c.waitFor(t, readFileWait(w.path("woken"), map[string]any{"poll_sec": 50, "max_wait_sec": 100, "wake_on_event": "recorded-wake"}))
	}()
	eventually(t, "the wait_for's first sample", func() bool { return w.calls("woken") >= 1 })
	latchTookTheWait(t, tc, "event/recorded-wake")
	w.write("woken", "READY")
	c.postEvent(t, map[string]any{"name": "recorded-wake", "payload": "wake"})
	assert.Equal(t, "matched", (<-woken).Reason)
	rec.waitFor(engine, "waitfor_woken", w.path("woken"))

	require.NoError(t, tc.GetWorkflow(context.Background(), "event/recorded", "").Get(context.Background(), nil),
		"the latch ends once its posts outlive the retention")
	rec.workflow(engine, "event_latch", "event/recorded")
	rec.write()
}

// recordAnswered records an agent invocation whose permission blocker is
// answered (the answer update a tasks/update sends): its CLI is stopped
// and its session resumed with the answer, which runs to success.
func recordAnswered(t *testing.T, prefix string) {
	aw := newAgentWorkspace(t, 30)
	aw.script("asker", `{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"Claude requested permissions to use Write, but you haven't granted it yet."}]}}`,
		"@wait never")
	aw.script("granted", `{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"written","session_id":"{session}"}`)
	c := aw.startServe(aw.config).client(t)
	rec := newRecorder(t, prefix)

	id := c.startAgent(t, "fake", "asker", nil)
	eventually(t, "the blocker", func() bool { return c.waitAgent(t, id).Reason == "execution_blocked" })
	engine := aw.owner().Engine
	handle, err := temporalClient(t, engine).UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: workflows.AgentAnswerUpdate, WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{workflows.AgentAnswerRequest{Code: workflows.BlockerPermission, Answer: "granted", Window: testTimeout}},
	})
	require.NoError(t, err)
	var answered workflows.AgentWaitAnswer
	require.NoError(t, handle.Get(context.Background(), &answered))
	assert.Equal(t, workflows.AgentSucceeded, answered.Status)
	assert.Equal(t, "succeeded", c.waitUntilFinished(t, id).Status)
	rec.workflow(engine, "agent_answered", id)

	// The CLI exits after a blocker a caller that can answer was asked:
	// the invocation holds for the answer, which runs as a run of its own.
	aw.script("exits", `{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"Claude requested permissions to use Write, but you haven't granted it yet."}]}}`,
		"@wait exit-now",
		`{"type":"result","subtype":"success","is_error":false,"result":"not written","session_id":"{session}"}`)
	held := c.startAgent(t, "fake", "exits", nil)
	tc := temporalClient(t, engine)
	asked, err := tc.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{
		WorkflowID: held, UpdateName: workflows.AgentWaitUpdate, WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{workflows.AgentWaitRequest{Window: testTimeout, Answers: true}},
	})
	require.NoError(t, err)
	var blocked workflows.AgentWaitAnswer
	require.NoError(t, asked.Get(context.Background(), &blocked))
	require.True(t, blocked.Answerable)
	aw.release("exit-now")
	eventually(t, "the CLI to exit", func() bool { return strings.Contains(readFile(aw.path("ends.log")), "exits exit 0") })
	handle, err = tc.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{
		WorkflowID: held, UpdateName: workflows.AgentAnswerUpdate, WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{workflows.AgentAnswerRequest{Code: workflows.BlockerPermission, Answer: "granted", Window: testTimeout}},
	})
	require.NoError(t, err)
	require.NoError(t, handle.Get(context.Background(), &answered))
	assert.Equal(t, workflows.AgentSucceeded, answered.Status)
	assert.Equal(t, "succeeded", c.waitUntilFinished(t, held).Status)
	rec.workflow(engine, "agent_answered_after_exit", held)
	rec.write()
}

// recordMaxRun records an agent invocation that runs past
// agents.max_run_sec: it ends failed with error.code timeout, the CLI's
// last reply as its output.
func recordMaxRun(t *testing.T, prefix string) {
	aw := newAgentWorkspace(t, 30)
	aw.script("forever", `{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"halfway"}]}}`, "@wait never")
	agents, err := os.ReadFile(aw.config)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(aw.config, []byte(strings.Replace(string(agents), "[agents]\n", "[agents]\nmax_run_sec = 12\n", 1)), 0o644))
	c := aw.startServe(aw.config).client(t)
	rec := newRecorder(t, prefix)

	id := c.startAgent(t, "fake", "forever", nil)
	p := c.waitUntilFinished(t, id)
	assert.Equal(t, "failed", p.Status)
	require.NotNil(t, p.Error)
	assert.Equal(t, "timeout", p.Error.Code)
	assert.Contains(t, p.Error.Message, "the run exceeded agents.max_run_sec (12 s)")
	assert.Equal(t, "halfway", p.output())
	assert.Equal(t, "sess-new", p.SessionID)
	rec.workflow(aw.owner().Engine, "agent_timeout", id)
	rec.write()
}

// recordWaitsAndAgents records wait_for matched, timed out and recovered
// after a crash, and agent invocations that succeeded, ended blocked, were
// cancelled, ignored a cancel that was not their owner's, and were resumed
// after their CLI was lost.
func recordWaitsAndAgents(t *testing.T, prefix string) {
	w := newAgentWorkspace(t, 2)
	w.script("hello", `{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"{session}"}`)
	w.script("noauth", `{"type":"thread.started","thread_id":"th-1"}`, `{"type":"turn.started"}`,
		`{"type":"turn.failed","error":{"message":"401 Unauthorized: invalid api key"}}`, `@exit 1`)
	w.script("forever", `{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"halfway"}]}}`, "@wait never")
	w.script("ignored", `{"type":"system","subtype":"init","session_id":"{session}"}`, "@wait go-ignored",
		`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"{session}"}`)
	w.script("session", `{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"started"}]}}`, "@wait never")
	// The resumed run gets durawait's resume prompt, whose first word names this script.
	w.script("durawait", `{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"picked up where it left off","session_id":"{session}"}`)

	first := w.startServe(w.config)
	c := first.client(t)
	engine := w.owner().Engine
	rec := newRecorder(t, prefix)

	w.write("matched", "READY")
	assert.Equal(t, "matched", c.waitFor(t, readFileWait(w.path("matched"), nil)).Reason)
	rec.waitFor(engine, "waitfor_matched", w.path("matched"))

	w.write("timeout", "pending")
	assert.Equal(t, "timeout", c.waitFor(t, readFileWait(w.path("timeout"), map[string]any{"max_wait_sec": 3})).Reason)
	rec.waitFor(engine, "waitfor_timeout", w.path("timeout"))

	succeeded := c.startAgent(t, "fake", "hello", nil)
	assert.Equal(t, "succeeded", c.waitUntilFinished(t, succeeded).Status)
	rec.workflow(engine, "agent_succeeded", succeeded)

	blocked := c.startAgent(t, "fakecodex", "noauth", nil)
	assert.Equal(t, "blocked", c.waitUntilFinished(t, blocked).Status)
	rec.workflow(engine, "agent_blocked", blocked)

	cancelled := c.startAgent(t, "fake", "forever", nil)
	eventually(t, "the cancelled run to report", func() bool { return c.waitAgent(t, cancelled).SessionID != "" })
	assert.Equal(t, "cancelled", c.agentCall(t, "cancel_agent", map[string]any{"invocation_id": cancelled}).Status)
	rec.workflow(engine, "agent_cancelled", cancelled)

	// A cancel that does not name the invocation's owner, sent around the
	// front end, is ignored: the run goes on to its end.
	ignored := c.startAgent(t, "fake", "ignored", nil)
	eventually(t, "the run to report", func() bool { return c.waitAgent(t, ignored).SessionID != "" })
	require.NoError(t, temporalClient(t, engine).SignalWorkflow(context.Background(), ignored, "",
		workflows.AgentCancelSignal, workflows.AgentCancelRequest{Principal: "bob"}))
	assert.Equal(t, "running", c.waitAgent(t, ignored).Status)
	w.release("go-ignored")
	assert.Equal(t, "succeeded", c.waitUntilFinished(t, ignored).Status)
	rec.workflow(engine, "agent_cancel_ignored", ignored)

	// A crash: durawait is killed while a wait_for samples and an agent
	// runs; the agent's CLI is lost with it (as on a machine loss). After
	// the restart the probe loop is retried and the run is resumed.
	w.write("crash", "rolling out")
	go func() { _, _ = c.call(context.Background(), "wait_for", readFileWait(w.path("crash"), nil), "") }()
	resumed := c.startAgent(t, "fake", "session", nil)
	eventually(t, "samples before the crash", func() bool { return w.calls("crash") >= 2 })
	eventually(t, "the session in a heartbeat", func() bool { return c.waitAgent(t, resumed).SessionID == "sess-new" })
	first.kill9()
	killRun(t, w, resumed)

	second := w.startServe(w.config)
	c2 := second.client(t)
	engine = w.owner().Engine
	before := w.calls("crash")
	done := make(chan waitResult, 1)
	go func() { done <- c2.waitFor(t, readFileWait(w.path("crash"), nil)) }()
	eventually(t, "samples after the restart", func() bool { return w.calls("crash") >= before+1 })
	w.write("crash", "READY")
	assert.Equal(t, "matched", (<-done).Reason)
	rec.waitFor(engine, "waitfor_recovered", w.path("crash"))

	p := c2.waitUntilFinished(t, resumed)
	assert.Equal(t, "succeeded", p.Status)
	assert.Equal(t, "picked up where it left off", p.output())
	rec.workflow(engine, "agent_resumed", resumed)

	// An operator cancels a wait_for while its call waits, and an agent
	// invocation while a wait_agent waits (the Temporal UI's Cancel).
	tc := temporalClient(t, engine)
	w.write("cancelled", "pending")
	go func() { _, _ = c2.call(context.Background(), "wait_for", readFileWait(w.path("cancelled"), nil), "") }()
	eventually(t, "the cancelled wait to sample", func() bool { return w.calls("cancelled") >= 1 })
	require.NoError(t, tc.CancelWorkflow(context.Background(), runningByInput(t, tc, "WaitFor", w.path("cancelled")), ""))
	rec.waitFor(engine, "waitfor_cancelled", w.path("cancelled"))

	operator := c2.startAgent(t, "fake", "forever", nil)
	eventually(t, "the run to report", func() bool { return c2.waitAgent(t, operator).SessionID != "" })
	waited := make(chan payload, 1)
	go func() { waited <- c2.waitAgent(t, operator) }()
	require.NoError(t, tc.CancelWorkflow(context.Background(), operator, ""))
	assert.Equal(t, "cancelled", (<-waited).Status)
	rec.workflow(engine, "agent_operator_cancelled", operator)

	// The host's lease, held by the first process, then by the second
	// (its own process back after the crash).
	rec.open(engine, "hostlease", hostLeaseID(t, tc))
	rec.write()
}

// runningByInput is the ID of the running workflow of type whose input
// contains needle.
func runningByInput(t *testing.T, tc client.Client, workflowType, needle string) string {
	t.Helper()
	var id string
	eventually(t, "a running "+workflowType+" with "+needle+" in its input", func() bool {
		resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: "WorkflowType = '" + workflowType + "' AND ExecutionStatus = 'Running'",
		})
		if err != nil {
			return false
		}
		for _, e := range resp.Executions {
			if h := history(t, tc, e.Execution.WorkflowId, e.Execution.RunId); h != nil && inputContains(h, needle) {
				id = e.Execution.WorkflowId
				return true
			}
		}
		return false
	})
	return id
}

// hostLeaseID is the ID of the engine's one host lease workflow.
func hostLeaseID(t *testing.T, tc client.Client) string {
	t.Helper()
	var id string
	eventually(t, "a host lease workflow", func() bool {
		resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: "WorkflowType = '" + workflows.HostLeaseWorkflowName + "' AND ExecutionStatus = 'Running'",
		})
		if err != nil || len(resp.Executions) != 1 {
			return false
		}
		id = resp.Executions[0].Execution.WorkflowId
		return true
	})
	return id
}

// recordTmux records wait_for_text matched on a real pane, and list_panes.
func recordTmux(t *testing.T, prefix string) {
	tw := newTmuxWorld(t, 30)
	c := tw.startServe(tw.config).client(t)
	engine := tw.owner().Engine
	rec := newRecorder(t, prefix)

	panes := listPanes(t, c)
	require.Len(t, panes, 1)
	tw.typeLine(panes[0].PaneID, "echo replay-ready-marker")
	r := waitText(t, c, panes[0], "replay-ready-marker")
	assert.True(t, r.Matched)
	rec.byInput(engine, "WaitForText", "waitfortext_matched", "replay-ready-marker")

	// list_panes as a front without a worker runs it: a workflow on the
	// tmux host's queue.
	frontConfig := tw.path("front.toml")
	require.NoError(t, os.WriteFile(frontConfig, []byte(fmt.Sprintf("data_dir = %q\ntools = [\"list_panes\"]\n\n[tmux]\nsocket = %q\n",
		tw.path("front-data"), tw.socket)), 0o644))
	front := tw.startFront(frontConfig, engine).client(t)
	eventually(t, "the front to list the worker's tools", func() bool { return listedTools(t, front)["list_panes"] != "" })
	require.Len(t, listPanes(t, front), 1)
	rec.byInput(engine, workflows.ListPanesWorkflowName, "list_panes", "")
	rec.write()
}

// recordUnclaimed records an agent invocation no host claims: a front with
// [agents] takes start_agent, and the only worker (a durawait serve without
// [agents]) has no ClaimAgentHost activity. It takes AgentClaimTimeout
// (2 minutes).
func recordUnclaimed(t *testing.T, prefix string) {
	aw := newAgentWorkspace(t, 30)
	agents, err := os.ReadFile(aw.config)
	require.NoError(t, err)
	frontConfig := aw.path("front.toml")
	require.NoError(t, os.WriteFile(frontConfig, []byte(strings.Replace(string(agents),
		"data_dir = "+strconv.Quote(aw.path("data")), "data_dir = "+strconv.Quote(aw.path("front-data")), 1)), 0o644))
	aw.startServe(aw.writeConfig(aw.demoServer("demo"))) // overwrites aw.config: no [agents]
	engine := aw.owner().Engine
	c := aw.startFront(frontConfig, engine).client(t)
	rec := newRecorder(t, prefix)

	id := c.startAgent(t, "fake", "hello", nil)
	p := c.waitUntilFinished(t, id)
	assert.Equal(t, "failed", p.Status)
	require.NotNil(t, p.Error)
	assert.Equal(t, "start_failed", p.Error.Code)
	assert.Contains(t, p.Error.Message, "no host claimed this invocation")
	rec.workflow(engine, "agent_unclaimed", id)

	// A re-exposed tool the front calls on the worker, and the catalog by
	// which the worker told the front its tools.
	eventually(t, "the front to list the worker's tools", func() bool { return listedTools(t, c)["read_file"] != "" })
	aw.write("greeting", "hello")
	res, err := c.call(context.Background(), "read_file", map[string]any{"path": aw.path("greeting")}, "")
	require.NoError(t, err)
	assert.Equal(t, "hello", resultText(res))
	rec.byInput(engine, workflows.CallDownstreamToolWorkflowName, "call", aw.path("greeting"))
	rec.open(engine, "catalog", workflows.CatalogWorkflowID("durawait"))
	rec.write()
}

// recorder collects the histories of one engine's workflows, by file name.
type recorder struct {
	t         *testing.T
	prefix    string
	histories map[string]*historypb.History
}

func newRecorder(t *testing.T, prefix string) *recorder {
	return &recorder{t: t, prefix: prefix, histories: map[string]*historypb.History{}}
}

// workflow records the closed workflow id's history as file.
func (r *recorder) workflow(engine, file, id string) {
	r.t.Helper()
	tc := temporalClient(r.t, engine)
	r.histories[file] = closedHistory(r.t, tc, id, "")
}

// waitFor records the closed wait_for whose probe reads path.
func (r *recorder) waitFor(engine, file, path string) {
	r.t.Helper()
	r.byInput(engine, "WaitFor", file, path)
}

// byInput records the closed workflow of type whose input contains needle.
func (r *recorder) byInput(engine, workflowType, file, needle string) {
	r.t.Helper()
	tc := temporalClient(r.t, engine)
	ctx := context.Background()
	eventually(r.t, file+": a closed "+workflowType+" with "+needle+" in its input", func() bool {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: "WorkflowType = '" + workflowType + "' AND ExecutionStatus != 'Running'",
		})
		if err != nil {
			return false
		}
		for _, e := range resp.Executions {
			if h := closedHistory(r.t, tc, e.Execution.WorkflowId, e.Execution.RunId); inputContains(h, needle) {
				r.histories[file] = h
				return true
			}
		}
		return false
	})
}

// open records the history of the running workflow id as file, as it
// stands once its last workflow task has completed: a lease or catalog
// workflow never ends by itself.
func (r *recorder) open(engine, file, id string) {
	r.t.Helper()
	tc := temporalClient(r.t, engine)
	eventually(r.t, id+" to settle", func() bool {
		h := history(r.t, tc, id, "")
		if h == nil || h.Events[len(h.Events)-1].GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			return false
		}
		r.histories[file] = h
		return true
	})
}

// inputContains reports whether a history's workflow input contains needle.
func inputContains(h *historypb.History, needle string) bool {
	for _, p := range h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads() {
		if strings.Contains(string(p.GetData()), needle) {
			return true
		}
	}
	return false
}

// history is the history of a workflow run so far (nil: unreadable now).
func history(t *testing.T, tc client.Client, id, runID string) *historypb.History {
	t.Helper()
	hist := &historypb.History{}
	it := tc.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil
		}
		hist.Events = append(hist.Events, ev)
	}
	if len(hist.Events) == 0 {
		return nil
	}
	return hist
}

// closedHistory is the whole history of a workflow run, once it is closed.
func closedHistory(t *testing.T, tc client.Client, id, runID string) *historypb.History {
	t.Helper()
	var hist *historypb.History
	eventually(t, id+" to close", func() bool {
		hist = history(t, tc, id, runID)
		return hist != nil && closing(hist.Events[len(hist.Events)-1].GetEventType())
	})
	return hist
}

// closing reports whether an event closes a workflow run.
func closing(t enumspb.EventType) bool {
	switch t {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		return true
	}
	return false
}

// write writes every recorded history as <prefix><file>.json, in the JSON
// form the Temporal CLI and UI export.
func (r *recorder) write() {
	r.t.Helper()
	for file, h := range r.histories {
		data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(h)
		require.NoError(r.t, err)
		path := filepath.Join(replayDir, r.prefix+file+".json")
		require.NoError(r.t, os.WriteFile(path, data, 0o644))
		r.t.Logf("wrote %s (%d events)", path, len(h.Events))
	}
}
