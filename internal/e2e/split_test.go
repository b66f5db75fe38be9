package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/durawait/durawait/workflows"
)

// startFront runs `durawait front` on config against engine and waits for
// its /healthz to answer 200.
func (w *workspace) startFront(config, engine string) *instance {
	w.t.Helper()
	return w.startRole("front", config, engine)
}

// startRole runs `durawait <role>` (front or worker) on the Temporal at
// engine and waits for its /healthz to answer 200.
func (w *workspace) startRole(role, config, engine string) *instance {
	w.t.Helper()
	return w.startRoleWith(role, config, append([]string{"--temporal", engine}, engineFlags(engine)...), nil)
}

// startRoleWith runs `durawait <role>` with flags and env added (they say
// which Temporal and how to connect) and waits for its /healthz to answer
// 200.
func (w *workspace) startRoleWith(role, config string, flags, env []string) *instance {
	w.t.Helper()
	inst := &instance{t: w.t, http: freeAddr(w.t), log: &syncBuffer{}, done: make(chan struct{})}
	inst.cmd = exec.Command(bin.durawait, append([]string{role, "--config", config, "--http", inst.http}, flags...)...)
	inst.cmd.Env = append(os.Environ(), env...)
	inst.cmd.Stdout, inst.cmd.Stderr = inst.log, inst.log
	require.NoError(w.t, inst.cmd.Start())
	go func() { _ = inst.cmd.Wait(); close(inst.done) }()
	w.t.Cleanup(func() {
		inst.kill9()
		if w.t.Failed() {
			w.t.Logf("%s log:\n%s", role, inst.log.String())
		}
	})
	eventually(w.t, "the "+role+"'s /healthz", func() bool {
		select {
		case <-inst.done:
			w.t.Fatalf("durawait %s exited during start-up:\n%s", role, inst.log.String())
		default:
		}
		resp, err := http.Get("http://" + inst.http + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return inst
}

// listedTools are the tools a client lists, by name, each as its JSON.
func listedTools(t testing.TB, c *mcpClient) map[string]string {
	t.Helper()
	list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	require.NoError(t, err)
	tools := map[string]string{}
	for _, tool := range list.Tools {
		b, err := json.Marshal(tool)
		require.NoError(t, err)
		tools[tool.Name] = string(b)
	}
	return tools
}

// A front end on one host and a worker on another serve every tool: the
// front (`durawait front`, a config with no downstream server) learns the
// tools from the worker's catalog, and every side effect runs on the
// worker (`durawait serve`, with the downstream server and the tmux host
// "hostb"). The front starts no process of its own.
func TestFrontAndWorkerInTwoProcesses(t *testing.T) {
	_, err := exec.LookPath("tmux")
	require.NoError(t, err, "tmux is needed (.ci/run installs it)")
	w := newWorkspace(t)
	tw := &tmuxWorld{workspace: w, socket: w.path("tmux.sock")}
	tw.tmux("new-session", "-d", "-s", "main", "-x", "120", "-y", "30", "sh")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", tw.socket, "kill-server").Run() })
	tmuxConfig := fmt.Sprintf("tools = [\"list_panes\", \"wait_for_text\"]\n\n[tmux]\nsocket = %q\nwait_max_sec = 30\n", tw.socket)

	workerConfig := w.writeConfigWith(tmuxConfig+"host = \"hostb\"\n", w.demoServer("demo"))
	worker := w.startServe(workerConfig)
	engine := w.owner().Engine
	frontConfig := w.path("front.toml")
	require.NoError(t, os.WriteFile(frontConfig, []byte(fmt.Sprintf("data_dir = %q\nlog_level = \"debug\"\n%s\n[host]\nlease_sec = 2\n",
		w.path("front-data"), tmuxConfig)), 0o644))
	front := w.startFront(frontConfig, engine)
	c := front.client(t)
	ctx := context.Background()

	// The worker published its tmux host's queue, named by [tmux] host.
	tc := temporalClient(t, engine)
	v, err := tc.QueryWorkflow(ctx, workflows.CatalogWorkflowID("durawait"), "", workflows.CatalogQueryName)
	require.NoError(t, err)
	var cat workflows.DownstreamCatalog
	require.NoError(t, v.Get(&cat))
	assert.Equal(t, "durawait-tmux-hostb", cat.TmuxHostQueue)

	// tools/list shows the re-exposed tools exactly as the worker lists them.
	eventually(t, "the front to list the worker's tools", func() bool { return listedTools(t, c)["read_file"] != "" })
	viaFront, viaWorker := listedTools(t, c), listedTools(t, worker.client(t))
	for _, name := range []string{"wait_for", "read_file", "structured_file", "clock", "counter", "fail", "delete_file", "list_panes", "wait_for_text"} {
		require.Contains(t, viaFront, name)
		assert.JSONEq(t, viaWorker[name], viaFront[name], name)
	}

	// A re-exposed call runs on the worker.
	w.write("greeting", "hello from the worker's probe")
	res, err := c.call(ctx, "read_file", map[string]any{"path": w.path("greeting")}, "")
	require.NoError(t, err)
	assert.False(t, res.IsError, resultText(res))
	assert.Equal(t, "hello from the worker's probe", resultText(res))
	assert.Equal(t, 1, w.calls("greeting"))
	res, err = c.call(ctx, "fail", map[string]any{}, "")
	require.NoError(t, err)
	assert.True(t, res.IsError, "the downstream tool's isError answer comes back as it is")

	// wait_for probes on the worker; the probe policy is the worker's.
	w.write("f", "pending")
	done := make(chan waitResult, 1)
	go func() { done <- c.waitFor(t, readFileWait(w.path("f"), nil)) }()
	eventually(t, "samples", func() bool { return w.calls(w.path("f")) >= 2 })
	w.write("f", "READY")
	wr := <-done
	assert.Equal(t, "matched", wr.Reason)
	assert.Equal(t, "READY", wr.LastObservation)
	refused := c.waitForRaw(t, map[string]any{
		"probe": map[string]any{"tool": "delete_file", "args": map[string]any{"path": w.path("f")}},
		"until": map[string]any{"matches": "x"},
	})
	assert.True(t, refused.IsError)
	assert.Contains(t, resultText(refused), "probe_tools", "the worker's probe policy applies")

	// list_panes lists the worker's panes; wait_for_text watches one there.
	panes := listPanes(t, c)
	require.Len(t, panes, 1)
	assert.Equal(t, "main", panes[0].Session)
	text := make(chan textResult, 1)
	go func() { text <- waitText(t, c, panes[0], "SPLIT-DONE") }()
	// A front in another process sends no progress (docs/architecture.md):
	// the worker's log says when the baseline is read.
	eventually(t, "the baseline read", func() bool {
		return strings.Contains(worker.log.String(), `msg="a pane watch read its baseline"`)
	})
	tw.typeLine(panes[0].PaneID, `printf '%s-%s\n' SPLIT DONE`)
	r := <-text
	assert.True(t, r.Matched)
	assert.Equal(t, "output", r.Source)

	// The front started no downstream server and no tmux client.
	children, _ := exec.Command("pgrep", "-P", fmt.Sprint(front.cmd.Process.Pid)).Output()
	assert.Empty(t, strings.TrimSpace(string(children)), "the front has no child process")

	// Its /healthz reports the worker's downstream servers: the worker
	// (a serve on loopback) runs the built-in probes too.
	assert.Equal(t, map[string]string{"demo": "connected", "local": "connected"}, downstreamHealth(t, front.http))

	// The catalog workflow runs on, and is no running wait for the
	// daemon's idle exit (cmd/durawait/idle.go counts with this query),
	// nor are the hosts' leases.
	count := func(query string) int64 {
		resp, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
		require.NoError(t, err)
		return resp.GetCount()
	}
	assert.Equal(t, int64(1), count(fmt.Sprintf("ExecutionStatus = 'Running' AND WorkflowType = '%s'", workflows.CatalogWorkflowName)))
	eventually(t, "no running wait", func() bool {
		return count(workflows.RunningWaitsQuery) == 0
	})
}

// downstreamHealth is the downstream servers' states that /healthz at
// addr reports.
func downstreamHealth(t testing.TB, addr string) map[string]string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/healthz")
	require.NoError(t, err)
	defer resp.Body.Close()
	var health struct {
		Downstream map[string]string `json:"downstream"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&health))
	return health.Downstream
}
