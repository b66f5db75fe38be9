package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/operatorservice/v1"

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
// own end.
func TestAStalledDurawaitKillsNoAgentAndLosesNoWait(t *testing.T) {
	ws := newWorkspace(t)
	tw := newTmuxWorldIn(ws, 60, "\n"+agentsTOML(ws, 60))
	w := &agentWorkspace{workspace: ws}
	inst := w.startServe(tw.config)
	c := inst.client(t)
	panes := listPanes(t, c)
	require.Len(t, panes, 1)

	w.write("job", "pending")
	w.script("hold", `{"type":"system","subtype":"init","session_id":"{session}"}`, `@wait go`,
		`{"type":"result","subtype":"success","is_error":false,"result":"survived the stall","session_id":"{session}"}`)
	id := c.startAgent(t, "fake", "hold", map[string]any{"cwd": w.path("work/repo")})
	var wg sync.WaitGroup
	var waited waitResult
	var text textResult
	var answeredAt [2]time.Time
	wg.Go(func() {
		waited = c.waitFor(t, readFileWait(w.path("job"), map[string]any{"max_wait_sec": 60}))
		answeredAt[0] = time.Now()
	})
	wg.Go(func() {
		text = waitText(t, c, panes[0], "STALL-OVER")
		answeredAt[1] = time.Now()
	})
	eventually(t, "the probe sampling, the CLI running, the pane watched", func() bool {
		return w.calls("job") > 0 && strings.Contains(readFile(w.path("argv.log")), "hold") && tw.controlClients() == 1
	})

	// Stopped for 5 s (the lease is 2 s); meanwhile the probe's file
	// flips, the text is printed and the CLI may finish.
	require.NoError(t, inst.cmd.Process.Signal(syscall.SIGSTOP))
	stopped := time.Now()
	w.write("job", "READY")
	tw.typeLine(panes[0].PaneID, `printf '%s-%s\n' STALL OVER`)
	w.release("go")
	time.Sleep(time.Until(stopped.Add(5 * time.Second))) // the stall itself
	require.NoError(t, inst.cmd.Process.Signal(syscall.SIGCONT))
	resumed := time.Now()

	wg.Wait()
	assert.Equal(t, "matched", waited.Reason)
	assert.Equal(t, "READY", waited.LastObservation)
	assert.True(t, text.Matched)
	p := c.waitUntilFinished(t, id)
	assert.Equal(t, "succeeded", p.Status, "%+v", p)
	assert.Equal(t, "survived the stall", p.output())
	assert.Equal(t, 1, strings.Count(readFile(w.path("argv.log")), "hold"), "the CLI ran once")
	assert.Equal(t, "hold exit 0", strings.TrimSpace(readFile(w.path("ends.log"))), "the CLI ran to its own end, not killed")
	t.Logf("answers after SIGCONT: wait_for %s, wait_for_text %s", answeredAt[0].Sub(resumed).Round(time.Millisecond), answeredAt[1].Sub(resumed).Round(time.Millisecond))
	_ = os.Remove(w.path("scripts/go"))
}
