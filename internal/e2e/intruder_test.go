package e2e

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/internal/datadir"
	"github.com/durawait/durawait/internal/enginecreds"
	"github.com/durawait/durawait/workflows"
)

// intruderAttempt is one line of the intruder's report (internal/e2e/intruder).
type intruderAttempt struct {
	Target, Attack, Detail string
	Got                    bool
}

// A second, unprivileged OS user (nobody) on the machine reaches nothing
// of a durawait's: against a serve without [auth], a serve with [auth] and
// a stdio daemon, it tries every listening socket of the process (the
// engine's frontend, its internal services, the Web UI's gate and the UI's
// own server, the MCP port but for a serve without [auth], which serves
// every local user by design: docs/security.md) with the Temporal
// frontend's calls (list, read a history, start durawait's workflow,
// signal, cancel) over plain gRPC and TLS, the UI's HTTP API, an unsigned
// hook post and an MCP call, each also as a DNS-rebound page would (Host
// evil.example), posts to every hook of the serve's hooks file with forged
// GitHub and GitLab signatures on every listener (the MCP port of a serve
// without [auth] too: a hook's secret holds whoever may call /mcp), and
// reads the data dir's credentials, database and folder, the hooks file,
// and (stdio) the registry by which `durawait status` finds the daemon.
// Every attempt fails, the running wait it aimed at is still running, unsignalled, and
// no event was posted.
// The process's listening sockets are exactly those docs/security.md's
// listener table names.
func TestASecondOSUserReachesNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a process as user nobody needs root (CI runs as root)")
	}
	setpriv, err := exec.LookPath("setpriv")
	require.NoError(t, err, "setpriv (util-linux) is needed")
	intruder := buildIntruder(t)
	for _, tc := range []struct {
		name  string
		auth  bool
		stdio bool
	}{
		{name: "serve without [auth]"},
		{name: "serve with [auth]", auth: true},
		{name: "stdio daemon without [auth]", stdio: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkspace(t)
			// The workspace is open to other users, as a home folder is:
			// only the data dir's own permissions keep nobody out.
			require.NoError(t, os.Chmod(filepath.Dir(w.dir), 0o755))
			require.NoError(t, os.Chmod(w.dir, 0o755))
			config := w.withHooks(w.writeConfig(w.demoServer("demo")), "")
			if tc.auth {
				config = w.withTokens(config)
			}
			uiPort := strconv.Itoa(freePort(t))
			var c *mcpClient
			var pid int
			if tc.stdio {
				// The user's registry of running durawaits (`durawait
				// status`) in the workspace too, behind its own
				// permissions alone.
				t.Setenv(datadir.RegistryEnv, w.path("registry"))
				w.killDaemonAtCleanup()
				c, _ = w.stdioClientArgs(config, "--ui-port", uiPort)
				pid = w.owner().PID
			} else {
				inst := w.startServeWith(config, freeAddr(t), nil, "--ui-port", uiPort)
				if tc.auth {
					c = inst.clientAs(t, aliceToken)
				} else {
					c = inst.client(t)
				}
				pid = inst.cmd.Process.Pid
			}
			owner := w.owner()
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go func() {
				_, _ = c.call(ctx, "wait_for", readFileWait(w.path("never"), map[string]any{"max_wait_sec": 300}), "")
			}()
			engine := temporalClient(t, owner.Engine)
			var target string
			eventually(t, "the wait to run", func() bool {
				resp, err := engine.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
					Query: "WorkflowType = 'WaitFor' AND ExecutionStatus = 'Running'"})
				if err != nil || len(resp.Executions) == 0 {
					return false
				}
				target = resp.Executions[0].Execution.WorkflowId
				return true
			})

			listeners := listeningAddrs(t, pid)
			mcpAddr := strings.TrimSuffix(strings.TrimPrefix(owner.HTTP, "http://"), "/mcp")
			ui, err := url.Parse(owner.UI)
			require.NoError(t, err)
			known := map[string]string{mcpAddr: "mcp", owner.Engine: "engine frontend", ui.Host: "ui gate"}
			var targets []string
			others := 0
			for _, addr := range listeners {
				if known[addr] == "" {
					others++ // the engine's history, matching and worker services, and the UI's own server
				}
				if addr == mcpAddr && !tc.auth && !tc.stdio {
					continue
				}
				targets = append(targets, addr)
			}
			for addr, name := range known {
				assert.Contains(t, listeners, addr, "the %s listens", name)
			}
			assert.Equal(t, 4, others, "listeners besides the MCP port, the engine's frontend and the UI's gate: %v", listeners)

			dataDir := w.path("data")
			files := []string{dataDir, enginecreds.FilesIn(dataDir).ClientKey, enginecreds.FilesIn(dataDir).CA, filepath.Join(dataDir, "temporal.db"), w.path("hooks.toml")}
			if tc.stdio {
				files = append(files, filepath.Join(dataDir, "local.token"), owner.Log, w.path("registry"))
				entries, err := os.ReadDir(w.path("registry"))
				require.NoError(t, err)
				require.Len(t, entries, 1, "the daemon noted its data dir in the registry")
				files = append(files, filepath.Join(w.path("registry"), entries[0].Name()))
			}
			if tc.auth {
				files = append(files, w.path("tokens.toml"))
			}
			hookNames := []string{"ci-done", "deploy-done", "alice-ci"}
			plan, err := json.Marshal(map[string]any{"addrs": targets, "workflow": target, "files": files, "controls": []string{w.dir},
				"hooks": listeners, "hook_names": hookNames})
			require.NoError(t, err)
			cmd := exec.Command(setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", intruder, string(plan))
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
			out, err := cmd.Output()
			require.NoError(t, err, "the intruder runs as nobody: %s", out)
			attempts := 0
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			for sc.Scan() {
				var a intruderAttempt
				require.NoError(t, json.Unmarshal(sc.Bytes(), &a), sc.Text())
				attempts++
				if a.Attack == "read (control)" {
					assert.True(t, a.Got, "nobody reads the workspace around the data dir (%s): %s", a.Target, a.Detail)
					continue
				}
				assert.False(t, a.Got, "nobody got through: %s on %s (%s): %s", a.Attack, a.Target, known[a.Target], a.Detail)
			}
			assert.Equal(t, len(targets)*(2*5+4*4)+len(listeners)*len(hookNames)*2+len(files)+1, attempts, "every attack was tried")

			desc, err := engine.DescribeWorkflowExecution(ctx, target, "")
			require.NoError(t, err)
			assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.WorkflowExecutionInfo.Status, "the wait runs on")
			resp, err := engine.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: "WorkflowId STARTS_WITH 'intruder'"})
			require.NoError(t, err)
			assert.Empty(t, resp.Executions, "no workflow of the intruder's")
			resp, err = engine.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: "WorkflowType = 'EventLatch'"})
			require.NoError(t, err)
			assert.Empty(t, resp.Executions, "no hook post of the intruder's was kept")
		})
	}
}

// buildIntruder builds the intruder where user nobody can run it.
func buildIntruder(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "durawait-intruder")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	path := filepath.Join(dir, "intruder")
	cmd := exec.Command("go", "build", "-o", path, "./internal/e2e/intruder")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "build the intruder: %s", out)
	return path
}

// freePort is a free loopback port.
func freePort(t testing.TB) int {
	t.Helper()
	_, port, err := net.SplitHostPort(freeAddr(t))
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	return p
}

// listeningAddrs are the TCP addresses (HOST:PORT) pid listens on: its
// socket descriptors matched with the kernel's tables of listening
// sockets.
func listeningAddrs(t testing.TB, pid int) []string {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var addrs []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		require.NoError(t, err)
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			const listen = "0A"
			if len(f) < 10 || f[3] != listen || !inodes[f[9]] {
				continue
			}
			addrs = append(addrs, kernelAddr(t, f[1]))
		}
	}
	return addrs
}

// kernelAddr decodes /proc/net/tcp's HEXIP:HEXPORT (the IP in host byte
// order, 32-bit words).
func kernelAddr(t testing.TB, s string) string {
	t.Helper()
	ipHex, portHex, _ := strings.Cut(s, ":")
	raw, err := hex.DecodeString(ipHex)
	require.NoError(t, err)
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		ip[i], ip[i+1], ip[i+2], ip[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	require.NoError(t, err)
	return net.JoinHostPort(ip.String(), strconv.Itoa(int(port)))
}

// An operator drives the embedded engine with the Temporal CLI the way
// `durawait status` says: `eval "$(durawait temporal-env)"`. With those
// variables the CLI lists the waits; without the client certificate it is
// refused.
func TestTheTemporalCLIReachesTheEngineThroughTemporalEnv(t *testing.T) {
	cli := temporalCLI(t)
	w := newWorkspace(t)
	w.startServe(w.writeConfig(w.demoServer("demo")))

	status, err := exec.Command(bin.durawait, "status", "--data-dir", w.path("data")).Output()
	require.NoError(t, err)
	assert.Contains(t, string(status), "durawait temporal-env --data-dir '"+w.path("data")+"'")

	out, err := exec.Command(bin.durawait, "temporal-env", "--data-dir", w.path("data")).Output()
	require.NoError(t, err)
	// What a POSIX shell's eval of the lines gives.
	sh := exec.Command("sh", "-c", string(out)+`env | grep '^TEMPORAL_'`)
	sh.Env = []string{"PATH=/usr/bin:/bin"}
	vars, err := sh.Output()
	require.NoError(t, err, "the lines are shell: %s", out)
	env := strings.Fields(string(vars))
	files := enginecreds.FilesIn(w.path("data"))
	assert.ElementsMatch(t, []string{"TEMPORAL_ADDRESS=" + w.owner().Engine, "TEMPORAL_NAMESPACE=default",
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH=" + files.CA, "TEMPORAL_TLS_CLIENT_CERT_PATH=" + files.ClientCert,
		"TEMPORAL_TLS_CLIENT_KEY_PATH=" + files.ClientKey}, env)

	list := func(env []string) (string, error) {
		cmd := exec.Command(cli, "workflow", "list", "--query", "WorkflowType = '"+workflows.HostLeaseWorkflowName+"'")
		cmd.Env = append([]string{"HOME=" + w.path("home"), "TEMPORAL_CONFIG_FILE=" + w.path("no-temporal.toml")}, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	got, err := list(env)
	require.NoError(t, err, got)
	assert.Contains(t, got, "HostLease", "the CLI lists the host's lease")

	var noCert []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TEMPORAL_TLS_CLIENT_") {
			noCert = append(noCert, kv)
		}
	}
	got, err = list(noCert)
	require.Error(t, err, "without the client certificate: %s", got)
	assert.Contains(t, got, "Request unauthorized")
}

// A holder of the engine's credentials who goes around the front end (the
// Temporal CLI, an SDK) gets no more than the front end would give: the
// worker checks again what the front end checked. A WaitFor whose probe is
// a destructive tool ends ProbeNotAllowed before any call, and a
// CallDownstreamTool of a server configured expose = false ends
// NotExposed: the victim file stays.
func TestTheWorkerRefusesWhatOnlyTheFrontEndWouldHaveRefused(t *testing.T) {
	w := newWorkspace(t)
	hidden := w.demoServer("hidden")
	no := false
	hidden.expose = &no
	w.startServe(w.writeConfig(w.demoServer("demo"), hidden))
	w.write("victim", "still here")
	tc := temporalClient(t, w.owner().Engine)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	spec := workflows.WaitForSpec{Probe: workflows.Probe{Tool: "demo.delete_file", Args: []byte(`{"path":` + strconv.Quote(w.path("victim")) + `}`)},
		Until: workflows.Until{Kind: workflows.ConditionMatches, Pattern: "deleted"}, PollSec: 1, MaxWaitSec: 30}
	run, err := tc.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{ID: "around-the-front/probe", TaskQueue: "durawait",
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.StartedRunning())},
		workflows.WaitForWorkflowName, workflows.WaitForInput{Spec: spec})
	require.NoError(t, err)
	err = run.Get(ctx, nil)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app, "the wait fails")
	assert.Equal(t, workflows.ErrTypeProbeNotAllowed, app.Type())
	assert.Contains(t, app.Error(), "demo.delete_file is annotated destructiveHint: true")

	run, err = tc.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{ID: "around-the-front/call", TaskQueue: "durawait"},
		workflows.CallDownstreamToolWorkflowName, workflows.DownstreamCall{Server: "hidden", Tool: "delete_file",
			Arguments: []byte(`{"path":` + strconv.Quote(w.path("victim")) + `}`)})
	require.NoError(t, err)
	err = run.Get(ctx, nil)
	require.ErrorAs(t, err, &app, "the call fails")
	assert.Equal(t, workflows.ErrTypeNotExposed, app.Type())
	assert.Contains(t, app.Error(), `server "hidden": the server is not configured here with expose = true`)

	assert.Equal(t, "still here", readFile(w.path("victim")))
	assert.NotContains(t, readFile(w.path("calls.log")), "delete_file", "no server was asked to delete")
}
