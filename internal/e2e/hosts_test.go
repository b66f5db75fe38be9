package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/durawait/durawait/worker/hosting"
	"github.com/durawait/durawait/workflows"
)

// Liveness per host (docs/hosts.md), end to end: a worker killed with -9
// has its waits and agent runs taken over by the other worker on its
// machine (its lease lapses, the survivor adopts its host), and a stalled
// durawait kills no agent CLI and loses no wait. The figures (takeover and
// answer times at scale, longer stalls) are make bench's.

// hostsWorld is two durawait workers on one machine and one front, on a
// Temporal dev server: the workers run agents (the fake agent CLI) and the
// demo probe server, each with a data dir (a host) of its own.
type hostsWorld struct {
	*agentWorkspace
	engine  string
	workers []*instance
	front   *mcpClient
}

func newHostsWorld(t *testing.T) *hostsWorld {
	w := &agentWorkspace{workspace: newWorkspace(t)}
	agents := agentsTOML(w.workspace, 60)
	hw := &hostsWorld{agentWorkspace: w, engine: startDevServer(t)}
	// durawait's search attributes, as an operator creates them.
	tc := temporalClient(t, hw.engine)
	_, err := tc.OperatorService().AddSearchAttributes(context.Background(), &operatorservice.AddSearchAttributesRequest{
		Namespace: "default", SearchAttributes: workflows.SearchAttributes(),
	})
	require.NoError(t, err)
	awaitSearchAttributes(t, temporalTarget{Namespace: "default", client: tc})
	for i := 1; i <= 2; i++ {
		config := w.writeConfigAt(fmt.Sprintf("worker%d.toml", i), w.path(fmt.Sprintf("worker%d-data", i)), agents, w.demoServer("demo"))
		hw.workers = append(hw.workers, w.startRole("worker", config, hw.engine))
	}
	front := w.writeConfigAt("front.toml", w.path("front-data"), agents)
	hw.front = w.startFront(front, hw.engine).client(t)
	return hw
}

// workerOfHost is the worker whose own host is host.
func (hw *hostsWorld) workerOfHost(t *testing.T, host string) (victim, survivor *instance) {
	for i, wk := range hw.workers {
		if ownHost(t, wk) == host {
			return wk, hw.workers[1-i]
		}
	}
	t.Fatalf("no worker runs host %s", host)
	return nil, nil
}

// A worker killed with -9 has its waits and its agents taken over by the
// other worker on its machine: its lease lapses (lease_sec 2), the other
// adopts its host, resumes its probe loops and follows its agents' CLIs
// (which ran on), and answers their activities. Nothing runs twice, no CLI
// is killed, every wait answers right.
func TestAKilledWorkersWaitsAndAgentsAreTakenOverByItsPeer(t *testing.T) {
	hw := newHostsWorld(t)
	tc := temporalClient(t, hw.engine)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Waits and agents through the front: the workers share them (the
	// worker that runs a wait's first task hosts its probe loop, the agent
	// host that takes a claim its run).
	const waits, agents = 8, 4
	type answer struct {
		i   int
		res waitResult
	}
	answers := make(chan answer, waits)
	for i := range waits {
		hw.write(fmt.Sprintf("w%d", i), "pending")
		go func() {
			res := hw.front.waitFor(t, readFileWait(hw.path(fmt.Sprintf("w%d", i)), map[string]any{"max_wait_sec": 150}))
			answers <- answer{i, res}
		}()
	}
	hw.script("hold", `{"type":"system","subtype":"init","session_id":"{session}"}`, `@wait go`,
		`{"type":"result","subtype":"success","is_error":false,"result":"held and done","session_id":"{session}"}`)
	var ids []string
	for range agents {
		ids = append(ids, hw.front.startAgent(t, "fake", "hold", map[string]any{"cwd": hw.path("work/repo")}))
	}
	eventually(t, "every probe sampling and every CLI running", func() bool {
		for i := range waits {
			if hw.calls(hw.path(fmt.Sprintf("w%d", i))) == 0 {
				return false
			}
		}
		return strings.Count(readFile(hw.path("argv.log")), "hold") == agents
	})

	// The victim: the worker hosting the most.
	hosted := map[string][]string{}
	waitIDs := found(t, tc, `WorkflowType = 'WaitFor' AND ExecutionStatus = 'Running'`)
	require.Len(t, waitIDs, waits)
	for _, id := range append(waitIDs, ids...) {
		host := waitHost(t, tc, id)
		hosted[host] = append(hosted[host], id)
	}
	var victimHost string
	for host, list := range hosted {
		if len(list) > len(hosted[victimHost]) {
			victimHost = host
		}
	}
	victim, survivor := hw.workerOfHost(t, victimHost)
	var victimWaits, victimAgents []string
	for _, id := range hosted[victimHost] {
		if strings.HasPrefix(id, workflows.AgentIDPrefix) {
			victimAgents = append(victimAgents, id)
		} else {
			victimWaits = append(victimWaits, id)
		}
	}
	t.Logf("the victim hosts %d waits and %d agents", len(victimWaits), len(victimAgents))

	before := map[int]int{}
	for i := range waits {
		before[i] = hw.calls(hw.path(fmt.Sprintf("w%d", i)))
	}
	killed := time.Now()
	victim.kill9()
	eventually(t, "the survivor to adopt the victim's host and resume its loops", func() bool {
		log := survivor.log.String()
		return strings.Contains(log, "resumed the loops of a host's waits") && strings.Contains(log, "of="+victimHost)
	})
	eventually(t, "every probe sampling again", func() bool {
		for i := range waits {
			if hw.calls(hw.path(fmt.Sprintf("w%d", i))) < before[i]+2 {
				return false
			}
		}
		return true
	})
	t.Logf("the victim's waits sampled again %s after the kill", time.Since(killed).Round(time.Millisecond))

	for i := range waits {
		hw.write(fmt.Sprintf("w%d", i), "READY")
	}
	for range waits {
		select {
		case a := <-answers:
			assert.Equal(t, "matched", a.res.Reason, "wait %d", a.i)
			assert.Equal(t, "READY", a.res.LastObservation, "wait %d", a.i)
		case <-ctx.Done():
			t.Fatal("not every wait answered")
		}
	}
	hw.release("go")
	for _, id := range ids {
		p := hw.front.waitUntilFinished(t, id)
		assert.Equal(t, "succeeded", p.Status, "%s: %+v", id, p)
		assert.Equal(t, "held and done", p.output(), id)
	}
	for _, id := range victimAgents {
		assert.Equal(t, survivor.cmd.Process.Pid, completedBy(t, tc, id, workflows.RunAgentActivityName).pid,
			"%s: the survivor followed the CLI to its end", id)
	}
	for _, id := range victimWaits {
		assert.Equal(t, survivor.cmd.Process.Pid, completedBy(t, tc, id, workflows.PollProbeActivityName).pid,
			"%s: the survivor answered the probe loop", id)
	}
	assert.Equal(t, agents, strings.Count(readFile(hw.path("argv.log")), "hold"), "no CLI started twice")
	assert.Equal(t, agents, strings.Count(readFile(hw.path("ends.log")), "hold exit 0"), "every CLI ran to its own end:\n%s", readFile(hw.path("ends.log")))
}

// A durawait stopped (SIGSTOP: a laptop's lid, a starved VM) for longer
// than its lease, with waits of all three kinds open, kills no agent CLI
// and loses no wait: once it runs again (SIGCONT), the waits whose thing
// happened during the stall answer it, and the agent's run goes on to its
// own end. make test stops it for 5 s (the lease is 2 s);
// DURAWAIT_STALL_SEC (a comma list of seconds) picks the stalls: make
// bench-stalls runs 5, 30 and 120 s and logs when each answer came.
func TestAStalledDurawaitKillsNoAgentAndLosesNoWait(t *testing.T) {
	for _, sec := range stallSeconds(t) {
		t.Run(fmt.Sprintf("stall=%ds", sec), func(t *testing.T) { stallDurawait(t, time.Duration(sec)*time.Second) })
	}
}

// stallSeconds reads DURAWAIT_STALL_SEC: 5 by default.
func stallSeconds(t *testing.T) []int { return envPositiveInts(t, "DURAWAIT_STALL_SEC", "5") }

// stallDurawait is one stall of TestAStalledDurawaitKillsNoAgentAndLosesNoWait.
func stallDurawait(t *testing.T, stall time.Duration) {
	ws := newWorkspace(t)
	// Bounds past the stall: what was due during it is answered after it.
	tw := newTmuxWorldIn(ws, 300, "\n"+agentsTOML(ws, 60))
	w := &agentWorkspace{workspace: ws}
	inst := w.startServe(tw.config)
	c := inst.client(t)
	panes := listPanes(t, c)
	require.Len(t, panes, 1)
	// The callers wait through the stall (a client that gives up calls
	// again and attaches to the same wait, as other tests show).
	callCtx, cancel := context.WithTimeout(context.Background(), stall+testTimeout)
	defer cancel()

	w.write("job", "pending")
	w.script("hold", `{"type":"system","subtype":"init","session_id":"{session}"}`, `@wait go`,
		`{"type":"result","subtype":"success","is_error":false,"result":"survived the stall","session_id":"{session}"}`)
	id := c.startAgent(t, "fake", "hold", map[string]any{"cwd": w.path("work/repo")})
	// A second CLI runs through the stall and past durawait's recovery
	// from it (its lease lapsed and taken back): a stall that ended it
	// would show in its end.
	w.script("through", `{"type":"system","subtype":"init","session_id":"{session}"}`, `@wait go-on`,
		`{"type":"result","subtype":"success","is_error":false,"result":"ran through the stall","session_id":"{session}"}`)
	through := c.startAgent(t, "fake", "through", map[string]any{"cwd": w.path("work/repo")})
	t.Cleanup(func() {
		// Not left running when the test fails before it ends the CLI.
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_, _ = c.call(ctx, "cancel_agent", map[string]any{"invocation_id": through}, "")
	})
	var wg sync.WaitGroup
	var waited waitResult
	var text textResult
	var answeredAt [3]time.Time
	var callErr [3]error
	var p payload
	wg.Go(func() {
		var res *mcp.CallToolResult
		if res, callErr[0] = c.call(callCtx, "wait_for", readFileWait(w.path("job"), map[string]any{"max_wait_sec": 300}), ""); callErr[0] == nil {
			callErr[0] = json.Unmarshal([]byte(resultText(res)), &waited)
		}
		answeredAt[0] = time.Now()
	})
	wg.Go(func() {
		var res *mcp.CallToolResult
		if res, callErr[1] = c.call(callCtx, "wait_for_text", map[string]any{
			"target": map[string]any{"paneId": panes[0].PaneID, "generation": panes[0].Generation}, "text": "STALL-OVER",
		}, ""); callErr[1] == nil {
			callErr[1] = json.Unmarshal([]byte(resultText(res)), &text)
		}
		answeredAt[1] = time.Now()
	})
	eventually(t, "the probe sampling, the CLI running, the pane watched", func() bool {
		argv := readFile(w.path("argv.log"))
		return w.calls("job") > 0 && strings.Contains(argv, "hold") && strings.Contains(argv, "through") && tw.controlClients() == 1
	})
	wg.Go(func() {
		// wait_agent until the run finishes (its window is 60 s).
		for p.Reason != "finished" && callErr[2] == nil {
			var res *mcp.CallToolResult
			if res, callErr[2] = c.call(callCtx, "wait_agent", map[string]any{"invocation_id": id}, ""); callErr[2] == nil {
				var raw []byte
				if raw, callErr[2] = json.Marshal(res.StructuredContent); callErr[2] == nil {
					callErr[2] = json.Unmarshal(raw, &p)
				}
			}
		}
		answeredAt[2] = time.Now()
	})

	// Stopped; meanwhile the probe's file flips, the text is printed and
	// the CLI finishes.
	require.NoError(t, inst.cmd.Process.Signal(syscall.SIGSTOP))
	stopped := time.Now()
	w.write("job", "READY")
	tw.typeLine(panes[0].PaneID, `printf '%s-%s\n' STALL OVER`)
	w.release("go")
	eventually(t, "the CLI to end during the stall", func() bool { return strings.Contains(readFile(w.path("ends.log")), "hold") })
	time.Sleep(time.Until(stopped.Add(stall))) // the stall itself
	require.NoError(t, inst.cmd.Process.Signal(syscall.SIGCONT))
	resumed := time.Now()

	wg.Wait()
	require.NoError(t, callErr[0], "wait_for")
	require.NoError(t, callErr[1], "wait_for_text")
	require.NoError(t, callErr[2], "wait_agent")
	assert.Equal(t, "matched", waited.Reason)
	assert.Equal(t, "READY", waited.LastObservation)
	assert.True(t, text.Matched)
	assert.Equal(t, "succeeded", p.Status, "%+v", p)
	assert.Equal(t, "survived the stall", p.output())
	assert.Equal(t, 1, strings.Count(readFile(w.path("argv.log")), "hold"), "the CLI ran once")
	assert.Equal(t, "hold exit 0", strings.TrimSpace(readFile(w.path("ends.log"))), "the CLI ran to its own end, not killed")

	// The lease (2 s) lapses in the stall, unless the holder's renewal
	// after SIGCONT reaches the engine (stopped with it, in the same
	// process) before the engine's own timeout of it does. Once durawait
	// holds it again, or has kept it, the CLI that ran through the stall
	// still runs, and ends as its own.
	tc := temporalClient(t, w.owner().Engine)
	host := ownHost(t, inst)
	eventually(t, "durawait to hold its host's lease again, or to have kept it through the stall", func() bool {
		return len(ownLease.FindAllString(inst.log.String(), -1)) >= 2 || leaseKeptThrough(tc, host, stopped, resumed)
	})
	assert.NotContains(t, readFile(w.path("ends.log")), "through", "the CLI that ran through the stall is not ended by it")
	w.release("go-on")
	ran := c.waitUntilFinished(t, through)
	assert.Equal(t, "succeeded", ran.Status, "%+v", ran)
	assert.Contains(t, readFile(w.path("ends.log")), "through exit 0")
	assert.Equal(t, 1, strings.Count(readFile(w.path("argv.log")), "through"), "the CLI ran once")
	t.Logf("stall %v: answers after SIGCONT: wait_for %s, wait_for_text %s, wait_agent %s (the lease is 2 s, the poll 1 s)", stall,
		answeredAt[0].Sub(resumed).Round(time.Millisecond), answeredAt[1].Sub(resumed).Round(time.Millisecond), answeredAt[2].Sub(resumed).Round(time.Millisecond))
	_ = os.Remove(w.path("scripts/go"))
	_ = os.Remove(w.path("scripts/go-on"))
}

// leaseKeptThrough reports whether host's lease outlived a stall from
// stopped to resumed: its grant began before the stall and was renewed
// after it.
func leaseKeptThrough(tc client.Client, host string, stopped, resumed time.Time) bool {
	d, err := tc.DescribeWorkflowExecution(context.Background(), workflows.HostLeaseWorkflowID(host), "")
	if err != nil {
		return false
	}
	for _, pa := range d.GetPendingActivities() {
		if pa.GetActivityType().GetName() == workflows.HoldLeaseActivityName &&
			pa.GetLastStartedTime().AsTime().Before(stopped) && pa.GetLastHeartbeatTime().AsTime().After(resumed) {
			return true
		}
	}
	return false
}

// An invocation that ends while no host follows its CLI (its
// agents.max_run_sec passes with its host down) ends the CLI too: the
// CLI runs on under its supervisor while the host is down, and the host,
// back, stops it at its first look at its spool. Here the front and the
// workflows run in processes of their own, so the invocation ends on time
// while the agent host is down.
func TestACLIWhoseInvocationEndedWhileItsHostWasDownIsStoppedWhenItComesBack(t *testing.T) {
	h := foreverOnAnAgentHost(t, "[agents]\nmax_run_sec = 3\n")
	w, c, tc, id := h.w, h.c, h.tc, h.id
	h.agentHost.kill9()
	eventually(t, "the invocation to end past max_run_sec + the loop's grace", func() bool {
		d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
		return err == nil && d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	})
	p := c.waitAgent(t, id)
	assert.Equal(t, "failed", p.Status, "%+v", p)
	require.NotNil(t, p.Error)
	assert.Equal(t, "timeout", p.Error.Code)
	assert.Empty(t, readFile(w.path("ends.log")), "the CLI ran on while its host was down")

	w.startRole("worker", h.workerConfig, h.engine)
	eventually(t, "the host back to stop the CLI", func() bool { return strings.TrimSpace(readFile(w.path("ends.log"))) != "" })
	assert.Equal(t, "forever signal terminated", strings.TrimSpace(readFile(w.path("ends.log"))))
}

// agentOnItsHost is an agent invocation whose CLI runs "forever" on an
// agent host of its own (a worker), beside an engine (durawait serve, with
// a worker that runs no agents) and a front end.
type agentOnItsHost struct {
	w                    *agentWorkspace
	c                    *mcpClient
	tc                   client.Client
	agentHost            *instance
	engine, workerConfig string
	id                   string
}

// foreverOnAnAgentHost starts it, with agentsTable ("[agents]\n" and any
// settings) at the head of the agents' configuration, and waits for the
// CLI to run.
func foreverOnAnAgentHost(t *testing.T, agentsTable string) agentOnItsHost {
	t.Helper()
	w := newAgentWorkspace(t, 30)
	w.script("forever", `{"type":"system","subtype":"init","session_id":"{session}"}`, "@wait never")
	agents := strings.Replace(agentsTOML(w.workspace, 30), "[agents]\n", agentsTable, 1)
	w.startServe(w.writeConfigAt("engine.toml", w.path("data"), "")) // the engine and a worker with no agents
	h := agentOnItsHost{w: w, engine: w.owner().Engine, workerConfig: w.writeConfigAt("worker.toml", w.path("worker-data"), agents)}
	h.agentHost = w.startRole("worker", h.workerConfig, h.engine)
	h.c = w.startFront(w.writeConfigAt("front.toml", w.path("front-data"), agents), h.engine).client(t)
	h.tc = temporalClient(t, h.engine)
	h.id = h.c.startAgent(t, "fake", "forever", map[string]any{"cwd": w.path("work/repo")})
	eventually(t, "the CLI to run", func() bool { return strings.Contains(readFile(w.path("argv.log")), "forever") })
	return h
}

// A cancel_agent that comes while the agent's host is down (its worker
// killed with -9) stops the CLI when the host comes back. The stop the
// invocation sends its host is taken by the worker that adopted the host
// (here the engine's, which runs no agents and cannot stop the CLI), or
// finds no worker and gives up after 5 s; either way it is over before the
// host's own worker is back. That worker resumes the run from its loop
// journal, learns from Temporal that its cancel was requested, and stops
// the CLI; the invocation ends cancelled.
func TestAnAgentCancelledWhileItsHostWasDownIsStoppedWhenItComesBack(t *testing.T) {
	h := foreverOnAnAgentHost(t, "[agents]\n")
	w, c, tc, id := h.w, h.c, h.tc, h.id
	h.agentHost.kill9()
	cancelCtx, stopCancel := context.WithCancel(context.Background())
	t.Cleanup(stopCancel)
	go func() {
		_, _ = c.call(cancelCtx, "cancel_agent", map[string]any{"invocation_id": id}, "")
	}()
	eventually(t, "the stop sent to the host that is down to be over", func() bool {
		iter := tc.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		stops := map[int64]bool{}
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				return false
			}
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				if ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == workflows.StopLoopActivityName {
					stops[ev.GetEventId()] = true
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
				if stops[ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId()] {
					return true
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				if stops[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()] {
					return true
				}
			}
		}
		return false
	})
	assert.Empty(t, readFile(w.path("ends.log")), "no host stopped the CLI yet")

	restarted := w.startRole("worker", h.workerConfig, h.engine)
	eventually(t, "the host back to stop the CLI", func() bool { return strings.TrimSpace(readFile(w.path("ends.log"))) != "" })
	assert.Equal(t, "forever signal terminated", strings.TrimSpace(readFile(w.path("ends.log"))))
	assert.Contains(t, restarted.log.String(), "resumed the host's loops from its journal")
	p := c.waitAgent(t, id)
	assert.Equal(t, "cancelled", p.Status, "%+v", p)
}

// An operator's `durawait waits show` of a wait_for whose host is down
// (its only worker killed with -9, no peer to adopt it) shows what the
// probe loop last recorded on its activity, marked recorded: the host
// that holds the loop's live progress cannot answer, and the record is
// the wait's last word until a host resumes it.
func TestShowGivesARecordedObservationWhileTheWaitsHostIsDown(t *testing.T) {
	w := newWorkspace(t)
	engine, tc := devServerWithSearchAttributes(t)
	worker := w.startRole("worker", w.writeConfigAt("worker.toml", w.path("worker-data"), "", w.demoServer("demo")), engine)
	front := w.startFront(w.writeConfigAt("front.toml", w.path("front-data"), ""), engine).client(t)

	w.write("job", "pending for the record")
	callCtx, hangUp := context.WithCancel(context.Background())
	t.Cleanup(hangUp)
	go func() {
		_, _ = front.call(callCtx, "wait_for", readFileWait(w.path("job"), map[string]any{"max_wait_sec": 120}), "")
	}()
	id := awaitProbeRecord(t, tc)
	desc, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	// Its workflow tasks time out after workflows.TaskTimeout, not the
	// SDK's 10 s: a task in the hands of the killed worker below goes to
	// another within it.
	require.Equal(t, workflows.TaskTimeout, desc.GetExecutionConfig().GetDefaultWorkflowTaskTimeout().AsDuration())
	worker.kill9()
	// The file changes after the kill: no host samples it now, so show
	// can only give the record.
	w.write("job", "changed while the host was down")

	out, errOut, ok := w.waits(append([]string{"show", id, "--temporal", engine, "--namespace", "default", "--json"}, engineFlags(engine)...)...)
	require.True(t, ok, errOut)
	var detail struct {
		LastObservation map[string]any `json:"last_observation"`
		State           string         `json:"state"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &detail), out)
	assert.Equal(t, "running", detail.State)
	assert.Equal(t, map[string]any{"recorded": true, "has_observation": true, "last_observation": "pending for the record"},
		detail.LastObservation, out)
}

// A worker restarted after a kill -9 resumes its own host's waits at
// once, whether or not its lease is granted: after a crash the grant is a
// few engine round trips that a restarted, busy engine may take seconds to
// make, and the waits must not wait for it. Here the grant never comes:
// while the worker is down, the host's lease workflow is replaced by a
// stand-in that no worker runs, so the restarted worker's "online" signal
// is taken and never answered. Its wait's loop, whose task died with the
// killed worker, is resumed all the same and answers the file's flip:
// from the host's loop journal, before any read of Temporal; and, with the
// journal lost (a machine's crash may lose its last writes), from
// Temporal's visibility and the wait's history.
func TestARestartedWorkerResumesItsWaitsWithoutItsLease(t *testing.T) {
	for _, tc := range []struct {
		name        string
		loseJournal bool
		resumedBy   string
	}{
		{"from its journal", false, "resumed the host's loops from its journal"},
		{"from Temporal with its journal lost", true, "resumed the loops of a host's waits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			restarted := restartWithoutLease(t, tc.loseJournal)
			assert.Contains(t, restarted.log.String(), tc.resumedBy)
		})
	}
}

// restartWithoutLease runs a wait_for on a worker, kills the worker,
// replaces its lease with a stand-in that never grants it (and, when
// loseJournal, removes its loop journal), flips the wait's file and
// restarts the worker; the wait must answer the flip. It returns the
// restarted worker.
func restartWithoutLease(t *testing.T, loseJournal bool) *instance {
	w := newWorkspace(t)
	engine, tc := devServerWithSearchAttributes(t)
	workerConfig := w.writeConfigAt("worker.toml", w.path("worker-data"), "", w.demoServer("demo"))
	worker := w.startRole("worker", workerConfig, engine)
	host := ownHost(t, worker)
	front := w.startFront(w.writeConfigAt("front.toml", w.path("front-data"), ""), engine).client(t)

	w.write("job", "pending")
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		res, err := front.call(ctx, "wait_for", readFileWait(w.path("job"), map[string]any{"max_wait_sec": 120}), "")
		answered <- answer{res, err}
	}()
	awaitProbeRecord(t, tc)
	worker.kill9()
	journal := filepath.Join(w.path("worker-data"), hosting.JournalFolder)
	entries, err := filepath.Glob(filepath.Join(journal, "*.json"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "the running loop is journaled")
	if loseJournal {
		require.NoError(t, os.RemoveAll(journal))
	}

	ctx := context.Background()
	leaseID := workflows.HostLeaseWorkflowID(host)
	require.NoError(t, tc.TerminateWorkflow(ctx, leaseID, "", "replaced by a stand-in that never grants the lease"))
	_, err = tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: leaseID, TaskQueue: "no-worker-polls-this"}, "StandInForTheLease")
	require.NoError(t, err)
	w.write("job", "READY after the restart")
	restarted := w.startRole("worker", workerConfig, engine)

	a := <-answered
	require.NoError(t, a.err)
	require.False(t, a.res.IsError, resultText(a.res))
	got := decodeWait(t, a.res)
	assert.Equal(t, "matched", got.Reason)
	assert.Equal(t, "READY after the restart", got.LastObservation)
	assert.NotContains(t, restarted.log.String(), "holding the lease of a host", "the stand-in granted no lease")
	eventually(t, "the answered loop to leave the journal", func() bool {
		entries, err := filepath.Glob(filepath.Join(journal, "*.json"))
		return err == nil && len(entries) == 0
	})
	return restarted
}

// devServerWithSearchAttributes starts a Temporal dev server with
// durawait's search attributes created, as an operator creates them.
func devServerWithSearchAttributes(t *testing.T) (string, client.Client) {
	t.Helper()
	engine := startDevServer(t)
	tc := temporalClient(t, engine)
	_, err := tc.OperatorService().AddSearchAttributes(context.Background(), &operatorservice.AddSearchAttributesRequest{
		Namespace: "default", SearchAttributes: workflows.SearchAttributes(),
	})
	require.NoError(t, err)
	awaitSearchAttributes(t, temporalTarget{Namespace: "default", client: tc})
	return engine, tc
}

// awaitProbeRecord waits for the one running wait_for's probe loop to
// record its first observation on its activity (so it runs on a worker),
// and returns the wait's ID.
func awaitProbeRecord(t *testing.T, tc client.Client) string {
	t.Helper()
	var id string
	eventually(t, "the probe loop's record of its first observation", func() bool {
		ids := found(t, tc, `WorkflowType = 'WaitFor' AND ExecutionStatus = 'Running'`)
		if len(ids) != 1 {
			return false
		}
		id = ids[0]
		desc, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
		require.NoError(t, err)
		for _, pa := range desc.GetPendingActivities() {
			if pa.GetActivityType().GetName() == workflows.PollProbeActivityName && pa.GetHeartbeatDetails() != nil {
				return true
			}
		}
		return false
	})
	return id
}

// A wait's bound counts from the call that started it, not from the first
// time a worker ran its workflow (the engine's record of the start, not
// the first workflow task: before 2026-12-05 a wait whose first task a kill
// caught answered late by the time no worker ran it, in the crash soak).
// Here the wait is started through a front while its only worker is down,
// and the worker comes back only after the bound: the loop takes the one
// sample a late loop takes and answers timeout, its elapsed_sec counting
// the time no worker ran it.
func TestABoundCountsFromTheCallNotFromTheFirstWorkflowTask(t *testing.T) {
	w := newWorkspace(t)
	engine, tc := devServerWithSearchAttributes(t)
	workerConfig := w.writeConfigAt("worker.toml", w.path("worker-data"), "", w.demoServer("demo"))
	worker := w.startRole("worker", workerConfig, engine)
	front := w.startFront(w.writeConfigAt("front.toml", w.path("front-data"), ""), engine).client(t)
	eventually(t, "the front to list the worker's tools", func() bool { return listedTools(t, front)["read_file"] != "" })
	worker.kill9()

	w.write("job", "pending")
	const maxWait = 3
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	answered := make(chan answer, 1)
	called := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		res, err := front.call(ctx, "wait_for", readFileWait(w.path("job"), map[string]any{"max_wait_sec": maxWait}), "")
		answered <- answer{res, err}
	}()
	eventually(t, "the wait's run in the engine", func() bool {
		resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: "default", Query: fmt.Sprintf("WorkflowType = %q", workflows.WaitForWorkflowName),
		})
		return err == nil && len(resp.Executions) == 1
	})
	// The worker stays down past the bound (and a second more): the
	// scenario, not a hope.
	down := maxWait*time.Second + time.Second
	time.Sleep(time.Until(called.Add(down)))
	require.Zero(t, w.calls("job"), "no worker sampled while down")
	w.startRole("worker", workerConfig, engine)

	a := <-answered
	require.NoError(t, a.err)
	require.False(t, a.res.IsError, resultText(a.res))
	got := decodeWait(t, a.res)
	assert.Equal(t, "timeout", got.Reason)
	assert.Equal(t, 1, got.Samples, "a loop that starts past its bound takes one sample")
	assert.Equal(t, 1, w.calls("job"))
	assert.GreaterOrEqual(t, got.ElapsedSec, down.Seconds(), "elapsed_sec counts from the call")
}
