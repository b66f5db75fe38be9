package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/workflows"
)

// temporalTarget is a Temporal service started outside durawait and how
// each party connects to it.
type temporalTarget struct {
	// Addr is the frontend's gRPC address; Namespace the namespace durawait
	// runs in (it exists, without durawait's search attributes).
	Addr, Namespace string
	// connect returns the flags and environment with which the i-th
	// durawait process of the scenario connects (0 and 1 the workers, 2
	// and 3 the front ends).
	connect func(i int) (flags, env []string)
	// connected are what the i-th process logs in its "connected to
	// Temporal" line (namespace, TLS, where the address came from).
	connected func(i int) []string
	// client is the test's own SDK client, as an operator's tools connect.
	client client.Client
	// cliConnect are what the create lines a refusing role prints must
	// carry to connect the Temporal CLI as that role is connected
	// (--address, TLS).
	cliConnect []string
}

// rolesWorld is the scenario's hosts: two workers and two front ends, each
// its own process with its own config and data dir, sharing one demo
// probe's call log, one tmux server and one agent scripts folder.
type rolesWorld struct {
	*workspace
	target           temporalTarget
	tmuxSocket       string
	worker1, worker2 string // configs: the agent host, the tmux host
	front            [2]string
}

// newRolesWorld writes the configs: worker 1 runs the agent CLI (its
// [agents] providers), worker 2 owns the tmux server (tools list_panes and
// wait_for_text, [tmux] host "hostb"); the front ends know the provider's
// name and the tmux socket, and run neither.
func newRolesWorld(t *testing.T, target temporalTarget) *rolesWorld {
	_, err := exec.LookPath("tmux")
	require.NoError(t, err, "tmux is needed (.ci/run installs it)")
	w := newWorkspace(t)
	rw := &rolesWorld{workspace: w, target: target, tmuxSocket: w.path("tmux.sock")}
	require.NoError(t, os.MkdirAll(w.path("scripts"), 0o755))
	require.NoError(t, os.MkdirAll(w.path("work/repo"), 0o755))
	rw.tmux("new-session", "-d", "-s", "main", "-x", "120", "-y", "30", "sh")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", rw.tmuxSocket, "kill-server").Run() })

	tools := "tools = [\"list_panes\", \"wait_for_text\"]\n"
	tmux := fmt.Sprintf("\n[tmux]\nsocket = %q\nwait_max_sec = 60\n", rw.tmuxSocket)
	cmd, _ := json.Marshal([]string{bin.fakeagent, "--scripts", w.path("scripts"), "--argv-log", w.path("argv.log"), "{prompt}"})
	agents := fmt.Sprintf("\n[agents]\nwait_window_sec = 5\ncancel_grace_sec = 1\nallowed_roots = [%q]\n\n[agents.providers.fake]\nformat = \"claude-stream-json\"\ncommand = %s\n",
		w.path("work"), cmd)
	rw.worker1 = w.writeConfigAt("worker1.toml", w.path("worker1-data"), agents, w.demoServer("demo"))
	rw.worker2 = w.writeConfigAt("worker2.toml", w.path("worker2-data"), tools+tmux+"host = \"hostb\"\n", w.demoServer("demo"))
	for i, name := range []string{"frontA", "frontB"} {
		rw.front[i] = w.writeConfigAt(name+".toml", w.path(name+"-data"), tools+tmux+agents)
	}
	return rw
}

func (rw *rolesWorld) tmux(args ...string) string {
	rw.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", rw.tmuxSocket}, args...)...).CombinedOutput()
	require.NoError(rw.t, err, "tmux %v: %s", args, out)
	return string(out)
}

// start runs the i-th process of the scenario.
func (rw *rolesWorld) start(role, config string, i int) *instance {
	rw.t.Helper()
	flags, env := rw.target.connect(i)
	return rw.startRoleWith(role, config, flags, env)
}

// runRolesScenario is the scenario both Temporal services run (the Temporal
// CLI's dev server in make test, a production cluster on PostgreSQL with
// mTLS in make e2e-cluster):
//
//   - a worker refuses the namespace without durawait's search attributes,
//     printing the create lines; the Temporal CLI runs them;
//   - two workers and two front ends start, each connecting on its own;
//   - an agent invocation runs on worker 1 (the agent host) and a tmux
//     wait on worker 2 (the tmux host), whichever front end took the call;
//   - an event posted through front B ends a wait_for_event through front
//     A (the wait's answer from its workflow, not in process), and a wait
//     after the post is answered from the latch;
//   - a wait_for started through front A is re-attached through front B
//     (same workflow, elapsed_sec from the first call); the worker running
//     its probe loop is killed with SIGKILL, and the other one finishes it.
func runRolesScenario(t *testing.T, target temporalTarget) {
	rw := newRolesWorld(t, target)
	tc := target.client
	ctx := context.Background()

	rw.createSearchAttributesAfterRefusal()

	worker1 := rw.start("worker", rw.worker1, 0)
	eventually(t, "worker 1's catalog", func() bool { _, err := queryCatalog(tc); return err == nil })
	worker2 := rw.start("worker", rw.worker2, 1)
	// The tmux host's catalog is the latest: the front ends send the tmux
	// tools to its queue (docs/operations.md, tmux host).
	eventually(t, "worker 2's catalog, with its tmux host", func() bool {
		cat, err := queryCatalog(tc)
		return err == nil && cat.TmuxHostQueue == "durawait-tmux-hostb"
	})
	frontA := rw.start("front", rw.front[0], 2)
	frontB := rw.start("front", rw.front[1], 3)
	// Front A's caller speaks the session era (2025-11-25), front B's the
	// stateless one (2026-07-28): a cluster serves both.
	legacy, err := mcpclient.NewStreamableHttpClient("http://" + frontA.http + "/mcp")
	require.NoError(t, err)
	a, b := initializeAt(t, legacy, mcp.ProtocolVersion20251125), frontB.client(t)
	require.Equal(t, mcp.ProtocolVersion20251125, a.protocol)
	for _, c := range []*mcpClient{a, b} {
		eventually(t, "the front ends to list the workers' tools", func() bool { return listedTools(t, c)["read_file"] != "" })
	}
	workers := map[int]*instance{worker1.cmd.Process.Pid: worker1, worker2.cmd.Process.Pid: worker2}
	for i, p := range []*instance{worker1, worker2, frontA, frontB} {
		line := logLine(p.log.String(), "connected to Temporal")
		for _, want := range target.connected(i) {
			assert.Contains(t, line, want, "process %d", i)
		}
	}

	t.Run("an agent runs on the agent host, whichever front took the call", func(t *testing.T) {
		require.NoError(t, os.WriteFile(rw.path("scripts/cluster.script"), []byte(strings.Join([]string{
			`{"type":"system","subtype":"init","session_id":"{session}"}`,
			`@wait go-cluster`,
			`{"type":"result","subtype":"success","is_error":false,"result":"Done on the agent host.","session_id":"{session}"}`,
		}, "\n")+"\n"), 0o644))
		id := b.startAgent(t, "fake", "cluster", map[string]any{"cwd": rw.path("work/repo")})
		spool := strings.ReplaceAll(id, "/", "_")
		eventually(t, "the CLI to start on worker 1", func() bool {
			return strings.Contains(readFile(rw.path("argv.log")), "cluster")
		})
		require.DirExists(t, rw.path("worker1-data/agents/"+spool), "the run's spool is on the agent host's disk")
		require.NoError(t, os.WriteFile(rw.path("scripts/go-cluster"), nil, 0o644))
		p := a.waitUntilFinished(t, id)
		assert.Equal(t, "succeeded", p.Status)
		assert.Equal(t, "Done on the agent host.", p.output())
		assert.NoDirExists(t, rw.path("worker2-data/agents/"+spool))
		for _, activity := range []string{workflows.ClaimAgentHostActivity, workflows.RunAgentActivityName} {
			ran := activityRuns(t, tc, id, activity)
			require.NotEmpty(t, ran, activity)
			assert.Equal(t, worker1.cmd.Process.Pid, ran[len(ran)-1].pid, "%s ran on worker 1", activity)
			// Only agent hosts poll the claim queue: worker 2, which has no
			// agent CLI, never takes an attempt, so the first one claims.
			assert.Equal(t, int32(1), ran[len(ran)-1].attempt, "%s: the attempt that ran it", activity)
		}
		// A claim no host took in time asks the cluster whether agent
		// hosts poll their queue (AgentHostsPolling): the cluster reports
		// worker 1, the only agent host, as the look reads it.
		hosts := &activities.AgentHosts{Queues: tc}
		n, err := hosts.Polling(context.Background(), workflows.AgentHostsPollingInput{
			Queue: workflows.AgentClaimQueue("durawait"), Within: workflows.AgentClaimTimeout})
		require.NoError(t, err)
		assert.Equal(t, 1, n, "worker 1 polls the claim queue; worker 2 has no agents")
	})

	t.Run("a tmux wait runs on the tmux host, whichever front took the call", func(t *testing.T) {
		panes := listPanes(t, a)
		require.Len(t, panes, 1)
		text := make(chan textResult, 1)
		go func() { text <- waitText(t, b, panes[0], "CLUSTER-DONE") }()
		var clientPID int
		eventually(t, "worker 2's control client to attach", func() bool {
			out, err := exec.Command("tmux", "-S", rw.tmuxSocket, "list-clients", "-F", "#{client_control_mode} #{client_pid}").Output()
			if err != nil {
				return false
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if pid, ok := strings.CutPrefix(line, "1 "); ok {
					clientPID = atoi(pid)
				}
			}
			return clientPID > 0
		})
		assert.Equal(t, worker2.cmd.Process.Pid, parentPID(t, clientPID), "worker 2 started the tmux control client")
		rw.tmux("send-keys", "-t", panes[0].PaneID, "-l", `printf '%s-%s\n' CLUSTER DONE`)
		rw.tmux("send-keys", "-t", panes[0].PaneID, "Enter")
		r := <-text
		assert.True(t, r.Matched)
		var ids []string
		eventually(t, "the tmux wait in the visibility store", func() bool {
			ids = found(t, tc, `DurawaitTool = "wait_for_text"`)
			return len(ids) == 1
		})
		ran := activityRuns(t, tc, ids[0], workflows.WatchPaneActivityName)
		require.NotEmpty(t, ran)
		assert.Equal(t, worker2.cmd.Process.Pid, ran[len(ran)-1].pid, "the pane watch ran on worker 2")
	})

	t.Run("an event posted through one front ends a wait through the other", func(t *testing.T) {
		answered := make(chan eventWait, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			got, err := a.tryWaitEvent(ctx, map[string]any{"name": "cluster-release"})
			if err != nil {
				t.Error(err)
			}
			answered <- got
		}()
		latchTookTheWait(t, tc, "event/cluster-release")
		posted := b.postEvent(t, map[string]any{"name": "cluster-release", "payload": map[string]any{"on": "front B"}, "delivery_id": "cluster-1"})
		assert.Equal(t, 1, posted.Answered)
		got := <-answered
		assert.Equal(t, "posted", got.Reason)
		require.NotNil(t, got.Event)
		assert.Equal(t, posted.Seq, got.Event.Seq)
		assert.JSONEq(t, `{"on":"front B"}`, string(got.Event.Payload))
		// Post, then wait, the other way round: kept by the latch.
		again := a.waitEvent(t, map[string]any{"name": "cluster-release"})
		assert.True(t, again.Latched)
		assert.Equal(t, posted.Seq, again.Event.Seq)
	})

	t.Run("a wait re-attached through the other front outlives its worker", func(t *testing.T) {
		rw.write("job", "pending")
		args := readFileWait(rw.path("job"), nil)
		first := time.Now()
		callA, hangUp := context.WithCancel(ctx)
		returned := make(chan struct{})
		go func() { defer close(returned); _, _ = a.call(callA, "wait_for", args, "") }()
		eventually(t, "samples through front A", func() bool { return rw.calls(rw.path("job")) >= 2 })
		var ids []string
		eventually(t, "the running wait", func() bool {
			ids = found(t, tc, `DurawaitTool = "wait_for" AND ExecutionStatus = "Running"`)
			return len(ids) == 1
		})
		id := ids[0]
		hangUp() // front A's caller goes away; the wait runs on
		<-returned

		// The caller comes back through front B with another client, as
		// people do: the official Go SDK, speaking the 2026-07-28 era
		// (front A's call was mcp-go's, at 2025-11-25).
		goSDK := connectGoSDK(t, &sdkmcp.StreamableClientTransport{Endpoint: "http://" + frontB.http + "/mcp", MaxRetries: -1}, "2026-07-28")
		attached := time.Now()
		answer := make(chan waitResult, 1)
		answerErr := make(chan error, 1)
		go func() {
			res, err := goSDK.waitFor(ctx, args, "reattach")
			answer <- res
			answerErr <- err
		}()
		eventually(t, "front B to attach to the same wait", func() bool {
			log := frontB.log.String()
			return strings.Contains(log, "wait attached") && strings.Contains(log, id)
		})

		running := pendingProbe(t, tc, id)
		victim, ok := workers[running.pid]
		require.True(t, ok, "the probe loop runs on one of the two workers (identity %q)", running.identity)
		var survivor *instance
		for pid, wk := range workers {
			if pid != running.pid {
				survivor = wk
			}
		}
		victimHost := ownHost(t, victim)
		require.Equal(t, victimHost, waitHost(t, tc, id), "the wait's loop is on the victim's host")
		killed := time.Now()
		victim.kill9()
		// The victim's lease lapses (lease_sec 2 here) and the survivor, of
		// the same group, adopts its host: it resumes the wait's loop and
		// answers its activity.
		eventually(t, "the other worker to adopt the victim's host and resume its loop", func() bool {
			return strings.Contains(survivor.log.String(), "resumed the loops of a host's waits") &&
				strings.Contains(survivor.log.String(), "of="+victimHost)
		})
		t.Logf("host %s (worker %d) was adopted by worker %d in %s", victimHost, running.pid, survivor.cmd.Process.Pid, time.Since(killed).Round(time.Millisecond))
		before := rw.calls(rw.path("job"))
		eventually(t, "samples by the other worker", func() bool { return rw.calls(rw.path("job")) >= before+2 })
		rw.write("job", "READY")
		res := <-answer
		require.NoError(t, <-answerErr)
		assert.Equal(t, "matched", res.Reason)
		assert.Equal(t, "READY", res.LastObservation)
		assert.Greater(t, res.ElapsedSec, attached.Sub(first).Seconds(), "elapsed_sec counts from front A's call")
		assert.LessOrEqual(t, res.ElapsedSec, time.Since(first).Seconds())
		assert.Equal(t, []string{id}, found(t, tc, `WorkflowType = 'WaitFor'`), "one wait: front B's call started none")
		assert.Equal(t, survivor.cmd.Process.Pid, completedBy(t, tc, id, workflows.PollProbeActivityName).pid,
			"the other worker answered the probe loop")
	})
}

// createSearchAttributesAfterRefusal starts worker 1 on the bare
// namespace: it refuses with the create lines, connected as the worker is,
// which the Temporal CLI runs as printed until the namespace has them all.
func (rw *rolesWorld) createSearchAttributesAfterRefusal() {
	t := rw.t
	flags, env := rw.target.connect(0)
	cmd := exec.Command(bin.durawait, append([]string{"worker", "--config", rw.worker1, "--http", freeAddr(t)}, flags...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the worker must not start on a namespace without the search attributes:\n%s", out)
	require.Contains(t, string(out), "the namespace lacks durawait's search attributes")
	cli := temporalCLI(t)
	var lines int
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "temporal operator search-attribute create ")
		if !ok {
			continue
		}
		lines++
		require.Contains(t, line, "--namespace "+rw.target.Namespace+" ")
		for _, connect := range rw.target.cliConnect {
			require.Contains(t, line, connect)
		}
		// As an operator would paste it into a shell.
		b, err := exec.Command("sh", "-c", "exec \"$0\" operator search-attribute create "+rest, cli).CombinedOutput()
		require.NoError(t, err, "%s: %s", line, b)
	}
	require.Equal(t, len(workflows.SearchAttributeNames), lines, "one create line per search attribute:\n%s", out)
	awaitSearchAttributes(t, rw.target)
}

// awaitSearchAttributes waits until target's namespace lists every search
// attribute durawait uses.
func awaitSearchAttributes(t testing.TB, target temporalTarget) {
	t.Helper()
	eventually(t, "the namespace to list every search attribute", func() bool {
		resp, err := target.client.OperatorService().ListSearchAttributes(context.Background(),
			&operatorservice.ListSearchAttributesRequest{Namespace: target.Namespace})
		if err != nil {
			return false
		}
		for _, name := range workflows.SearchAttributeNames {
			if _, ok := resp.CustomAttributes[name]; !ok {
				return false
			}
		}
		return true
	})
}
