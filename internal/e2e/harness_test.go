// Package e2e runs durawait as its users do: the real binary with its
// embedded Temporal engine, real downstream MCP server processes, and real
// MCP clients over streamable HTTP and stdio.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/internal/datadir"
	"github.com/durawait/durawait/internal/enginecreds"
)

// Binaries built once for the whole package.
var bin struct {
	durawait, demoprobe, fakeagent string
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "durawait-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The durawait processes of these tests connect only where a test says:
	// no TEMPORAL_* of the developer's shell, and not the Temporal CLI's
	// own config file (its default profile would point serve at a cluster).
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "TEMPORAL_") {
			os.Unsetenv(name)
		}
	}
	os.Setenv("TEMPORAL_CONFIG_FILE", filepath.Join(dir, "no-temporal-config.toml"))
	// The durawaits of these tests note their data dirs in a registry of
	// their own, not the user's (`durawait status` with no flag).
	os.Setenv("DURAWAIT_REGISTRY_DIR", filepath.Join(dir, "running"))
	bin.durawait = filepath.Join(dir, "durawait")
	bin.demoprobe = filepath.Join(dir, "demoprobe")
	bin.fakeagent = filepath.Join(dir, "fakeagent")
	for out, pkg := range map[string]string{
		bin.durawait: "./cmd/durawait", bin.demoprobe: "./cmd/demoprobe", bin.fakeagent: "./internal/e2e/fakeagent",
	} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = "../.."
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build", pkg, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testTimeout bounds every wait on a condition in these tests: generous,
// since CI machines are slow, and never a sleep that hopes.
const testTimeout = 90 * time.Second

// eventually polls cond every 50ms until it holds or testTimeout passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freeAddr is a loopback address free now. Its port is below the
// kernel's ephemeral range (32768 and up) and the embedded engine's own
// picks (20000–31999, internal/engine), as docs/operations.md advises for
// a durawait restarted on a fixed port: no outgoing connection made while
// it is down can take it.
func freeAddr(t testing.TB) string {
	t.Helper()
	for range 50 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(10000+rand.Intn(10000)))
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			return addr
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// workspace is one test's folder: config, data dir, probe files, call log.
type workspace struct {
	t             testing.TB
	dir           string
	daemonCleanup sync.Once
}

func newWorkspace(t testing.TB) *workspace {
	return &workspace{t: t, dir: t.TempDir()}
}

func (w *workspace) path(name string) string { return filepath.Join(w.dir, name) }

// write sets a probe file's contents.
func (w *workspace) write(name, content string) {
	w.t.Helper()
	require.NoError(w.t, os.WriteFile(w.path(name), []byte(content), 0o644))
}

// calls counts the demo probe's calls whose arguments mention needle.
func (w *workspace) calls(needle string) int {
	b, err := os.ReadFile(w.path("calls.log"))
	if err != nil {
		return 0
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if strings.Contains(sc.Text(), needle) {
			n++
		}
	}
	return n
}

// server is one downstream server entry of the config: a command (stdio),
// or a url with an optional transport ("sse").
type server struct {
	name      string
	command   []string
	url       string
	transport string
	expose    *bool
	// probeTools allows probes of tools not annotated read-only.
	probeTools []string
}

// demoServer is the demo probe, logging calls to the workspace's call log.
// It refuses to start while the file "down" exists in the workspace, so a
// test can hold it down.
func (w *workspace) demoServer(name string) server {
	return w.demoServerStartingIn(name, 0)
}

// demoServerStartingIn is demoServer taking delay to start (durawait is
// ready only once its downstream servers have connected).
func (w *workspace) demoServerStartingIn(name string, delay time.Duration) server {
	script := fmt.Sprintf("sleep %g; test -e %q && { echo held down >&2; exit 1; }; exec %q --call-log %q",
		delay.Seconds(), w.path("down"), bin.demoprobe, w.path("calls.log"))
	return server{name: name, command: []string{"/bin/sh", "-c", script}}
}

// writeConfig writes durawait.toml with the given servers.
func (w *workspace) writeConfig(servers ...server) string {
	return w.writeConfigWith("", servers...)
}

// writeConfigWith writes durawait.toml with extra TOML (top-level keys,
// then tables) before the wait_for section.
func (w *workspace) writeConfigWith(extra string, servers ...server) string {
	w.t.Helper()
	return w.writeConfigAt("durawait.toml", w.path("data"), extra, servers...)
}

// writeConfigAt writes the config file name of the workspace with its own
// data dir: one process's config where several run side by side.
func (w *workspace) writeConfigAt(name, dataDir, extra string, servers ...server) string {
	w.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "data_dir = %q\nlog_level = \"debug\"\n%s\n\n[host]\nlease_sec = 2\n", dataDir, extra)
	for _, s := range servers {
		fmt.Fprintf(&b, "\n[[mcp_servers]]\nname = %q\n", s.name)
		if s.url != "" {
			fmt.Fprintf(&b, "url = %q\n", s.url)
		} else {
			cmd, _ := json.Marshal(s.command)
			fmt.Fprintf(&b, "command = %s\n", cmd)
		}
		if s.transport != "" {
			fmt.Fprintf(&b, "transport = %q\n", s.transport)
		}
		if s.expose != nil {
			fmt.Fprintf(&b, "expose = %v\n", *s.expose)
		}
		if s.probeTools != nil {
			tools, _ := json.Marshal(s.probeTools)
			fmt.Fprintf(&b, "probe_tools = %s\n", tools)
		}
	}
	path := w.path(name)
	require.NoError(w.t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// instance is a running `durawait serve`.
type instance struct {
	t    testing.TB
	cmd  *exec.Cmd
	http string
	log  *syncBuffer
	done chan struct{}
}

// syncBuffer collects a process's output safely.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveArgs are the flags every test instance runs with: no fixed ports,
// and no Web UI.
func serveArgs(config, httpAddr string) []string {
	return []string{"serve", "--config", config, "--http", httpAddr, "--engine-port", "0", "--no-ui"}
}

// withExtra appends a test's own flags to args; a test that asks for a
// Web UI (--ui-port) gets one.
func withExtra(args []string, extra ...string) []string {
	if slices.Contains(extra, "--ui-port") {
		args = slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--no-ui" })
	}
	return append(args, extra...)
}

// startServe runs `durawait serve` on the workspace's config over HTTP and
// waits for /healthz to answer 200.
func (w *workspace) startServe(config string) *instance {
	w.t.Helper()
	return w.startServeEnv(config, nil)
}

// startServeEnv is startServe with env added to durawait's environment.
func (w *workspace) startServeEnv(config string, env []string) *instance {
	w.t.Helper()
	return w.startServeAtEnv(config, freeAddr(w.t), env)
}

// startServeAt is startServe on a given HTTP address, with the workspace's
// private state dir.
func (w *workspace) startServeAt(config, addr string) *instance {
	w.t.Helper()
	return w.startServeAtEnv(config, addr, w.env())
}

func (w *workspace) startServeAtEnv(config, addr string, env []string) *instance {
	w.t.Helper()
	return w.startServeWith(config, addr, env)
}

// startServeWith is startServeAtEnv with more flags (later flags win).
func (w *workspace) startServeWith(config, addr string, env []string, flags ...string) *instance {
	w.t.Helper()
	inst := w.launchServe(config, addr, env, flags...)
	if !awaitHealthy(w.t, inst.http, inst.done) {
		w.t.Fatalf("durawait exited during start-up:\n%s", inst.log.String())
	}
	return inst
}

// launchServe runs `durawait serve` as startServeWith does, without waiting
// for it to be ready.
func (w *workspace) launchServe(config, addr string, env []string, flags ...string) *instance {
	w.t.Helper()
	inst := &instance{t: w.t, http: addr, log: &syncBuffer{}, done: make(chan struct{})}
	inst.cmd = exec.Command(bin.durawait, withExtra(serveArgs(config, inst.http), flags...)...)
	inst.cmd.Env = append(os.Environ(), env...)
	inst.cmd.Stdout, inst.cmd.Stderr = inst.log, inst.log
	require.NoError(w.t, inst.cmd.Start())
	go func() { _ = inst.cmd.Wait(); close(inst.done) }()
	w.t.Cleanup(func() {
		inst.kill9()
		// DURAWAIT_E2E_LOG=<file> keeps the log of the last durawait a
		// test or benchmark ran (a benchmark's heartbeat errors, retries).
		if f := os.Getenv("DURAWAIT_E2E_LOG"); f != "" {
			_ = os.WriteFile(f, []byte(inst.log.String()), 0o644)
		}
		if w.t.Failed() {
			w.t.Logf("durawait log:\n%s", inst.log.String())
		}
	})
	return inst
}

// awaitHealthy waits until durawait at addr answers /healthz 200 (true),
// or its process ends first (done closed: false).
func awaitHealthy(t testing.TB, addr string, done <-chan struct{}) (healthy bool) {
	t.Helper()
	healthy = true
	eventually(t, "/healthz 200", func() bool {
		select {
		case <-done:
			healthy = false
			return true
		default:
		}
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return healthy
}

// kill9 kills durawait without a chance to clean up, as a crash would.
func (i *instance) kill9() {
	_ = i.cmd.Process.Signal(syscall.SIGKILL)
	<-i.done
}

// client connects a real MCP client over streamable HTTP.
func (i *instance) client(t testing.TB) *mcpClient {
	t.Helper()
	c, err := client.NewStreamableHttpClient("http://" + i.http + "/mcp")
	require.NoError(t, err)
	return initialize(t, c)
}

// mcpClient is an initialized MCP client that records progress notifications.
type mcpClient struct {
	*client.Client
	mu       sync.Mutex
	progress map[string][]float64 // progress token -> progress values
	messages map[string][]string  // progress token -> progress messages
	protocol string               // the protocol version negotiated
}

func initialize(t testing.TB, c *client.Client) *mcpClient {
	t.Helper()
	return initializeAt(t, c, mcp.LATEST_PROTOCOL_VERSION)
}

// initializeAt initializes c offering protocol version.
func initializeAt(t testing.TB, c *client.Client, version string) *mcpClient {
	t.Helper()
	mc := &mcpClient{Client: c, progress: map[string][]float64{}, messages: map[string][]string{}}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != "notifications/progress" {
			return
		}
		token := fmt.Sprint(n.Params.AdditionalFields["progressToken"])
		p, _ := n.Params.AdditionalFields["progress"].(float64)
		msg, _ := n.Params.AdditionalFields["message"].(string)
		mc.mu.Lock()
		mc.progress[token] = append(mc.progress[token], p)
		mc.messages[token] = append(mc.messages[token], msg)
		mc.mu.Unlock()
	})
	// The transport lives until the test ends (an SSE stream ends with the
	// context it was started on); initialize is bounded by testTimeout.
	life, end := context.WithCancel(context.Background())
	t.Cleanup(end)
	require.NoError(t, c.Start(life))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = version
	req.Params.ClientInfo = mcp.Implementation{Name: "durawait-e2e", Version: "1"}
	res, err := c.Initialize(ctx, req)
	require.NoError(t, err)
	mc.protocol = res.ProtocolVersion
	t.Cleanup(func() { _ = c.Close() })
	return mc
}

func (c *mcpClient) progressOf(token string) []float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]float64(nil), c.progress[token]...)
}

func (c *mcpClient) messagesOf(token string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.messages[token]...)
}

// call calls a tool; token, when not empty, asks for progress.
func (c *mcpClient) call(ctx context.Context, tool string, args map[string]any, token string) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	if token != "" {
		req.Params.Meta = &mcp.Meta{ProgressToken: token}
	}
	return c.CallTool(ctx, req)
}

// waitResult is wait_for's structured result.
type waitResult struct {
	Reason              string  `json:"reason"`
	Condition           string  `json:"condition"`
	LastObservation     string  `json:"last_observation"`
	ElapsedSec          float64 `json:"elapsed_sec"`
	Samples             int     `json:"samples"`
	EffectiveMaxWaitSec int     `json:"effective_max_wait_sec"`
	ProbeError          string  `json:"probe_error"`
}

// waitFor calls wait_for and decodes a successful result; it fails the test
// on an isError result.
func (c *mcpClient) waitFor(t testing.TB, args map[string]any) waitResult {
	t.Helper()
	res := c.waitForRaw(t, args)
	require.False(t, res.IsError, "wait_for failed: %s", resultText(res))
	return decodeWait(t, res)
}

func (c *mcpClient) waitForRaw(t testing.TB, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	res, err := c.call(ctx, "wait_for", args, "")
	require.NoError(t, err)
	return res
}

func decodeWait(t testing.TB, res *mcp.CallToolResult) waitResult {
	t.Helper()
	var structured, fromText waitResult
	raw := res.RawStructuredContent
	if len(raw) == 0 {
		var err error
		raw, err = json.Marshal(res.StructuredContent)
		require.NoError(t, err)
	}
	require.NoError(t, json.Unmarshal(raw, &structured))
	require.NoError(t, json.Unmarshal([]byte(resultText(res)), &fromText), "the text rendering is the same JSON")
	require.Equal(t, structured, fromText)
	return structured
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// readFileWait is the usual wait: until the file says READY.
func readFileWait(path string, extra map[string]any) map[string]any {
	args := map[string]any{
		"probe":        map[string]any{"tool": "read_file", "args": map[string]any{"path": path}},
		"until":        map[string]any{"matches": "READY"},
		"poll_sec":     1,
		"max_wait_sec": 60,
	}
	for k, v := range extra {
		args[k] = v
	}
	return args
}

// owner reads the data dir's lock file, and notes where the credentials
// of its engine are (engineCredentials).
func (w *workspace) owner() datadir.Owner {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.path("data"), "durawait.lock"))
	require.NoError(w.t, err)
	var o datadir.Owner
	require.NoError(w.t, json.Unmarshal(b, &o))
	if o.Engine != "" {
		knownEngines.Store(o.Engine, enginecreds.FilesIn(w.path("data")))
	}
	return o
}

// uiLogin opens the Web UI's login link (from the owner record) as a
// browser would: it returns the UI's base URL and a client holding the
// session cookie.
func uiLogin(t testing.TB, loginURL string) (string, *http.Client) {
	t.Helper()
	u, err := url.Parse(loginURL)
	require.NoError(t, err)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := &http.Client{Jar: jar}
	resp, err := hc.Get(loginURL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the UI's login link")
	return u.Scheme + "://" + u.Host, hc
}

// knownEngines maps the address of an embedded engine the tests found
// (workspace.owner, or started in a test) to its data dir's credentials:
// the tests pass engines around by address, as operators do, and present
// the credentials an operator would take from `durawait temporal-env`.
var knownEngines sync.Map

// engineCredentials are the credentials of the engine at addr, if the
// tests know it as an embedded engine (a Temporal CLI dev server takes
// none).
func engineCredentials(addr string) (enginecreds.Files, bool) {
	f, ok := knownEngines.Load(addr)
	if !ok {
		return enginecreds.Files{}, false
	}
	return f.(enginecreds.Files), true
}

// engineTLS is the TLS configuration of a client of the engine at addr:
// nil for an engine the tests do not know as embedded (plain gRPC).
func engineTLS(t testing.TB, addr string) *tls.Config {
	t.Helper()
	files, ok := engineCredentials(addr)
	if !ok {
		return nil
	}
	conf, err := files.ClientTLS()
	require.NoError(t, err)
	return conf
}

// engineFlags are the --tls-* flags that connect a durawait role to the
// engine at addr (none for an engine not known as embedded).
func engineFlags(addr string) []string {
	files, ok := engineCredentials(addr)
	if !ok {
		return nil
	}
	return []string{"--tls-ca-path", files.CA, "--tls-cert-path", files.ClientCert, "--tls-key-path", files.ClientKey}
}

// stdioClient starts `durawait serve --stdio` under a real MCP stdio client
// and returns the client and the durawait process: a bridge to the
// workspace's background daemon, which it starts when none runs. The
// daemon is killed when the test ends.
func (w *workspace) stdioClient(config string) (*mcpClient, *os.Process) {
	w.t.Helper()
	w.killDaemonAtCleanup()
	return w.stdioClientArgs(config)
}

// stdioClientNoDaemon starts `durawait serve --stdio --no-daemon`: the
// whole of durawait in the one process, so a kill -9 of it is a crash of
// the engine.
func (w *workspace) stdioClientNoDaemon(config string) (*mcpClient, *os.Process) {
	w.t.Helper()
	return w.stdioClientArgs(config, "--no-daemon")
}

func (w *workspace) stdioClientArgs(config string, extra ...string) (*mcpClient, *os.Process) {
	w.t.Helper()
	var cmd *exec.Cmd
	logs := &syncBuffer{}
	args := withExtra([]string{"serve", "--stdio", "--config", config, "--engine-port", "0", "--no-ui"}, extra...)
	tr := transport.NewStdioWithOptions(bin.durawait, w.env(), args,
		transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd = exec.Command(command, args...)
			cmd.Env = append(os.Environ(), env...)
			return cmd, nil
		}),
		transport.WithCommandStderrWriter(logs))
	c := client.NewClient(tr)
	w.t.Cleanup(func() {
		if cmd != nil {
			_ = cmd.Process.Kill()
		}
		if w.t.Failed() {
			w.t.Logf("durawait (stdio) log:\n%s", logs.String())
		}
	})
	mc := initialize(w.t, c)
	return mc, cmd.Process
}

// env is the environment every durawait of the workspace runs with: a
// private state dir, never the user's.
func (w *workspace) env() []string {
	return []string{"XDG_STATE_HOME=" + w.path("state")}
}

// killDaemonAtCleanup makes sure no daemon of the workspace's data dir
// outlives the test: at cleanup it kills the data dir's owner, if any, and
// waits until the lock is free.
func (w *workspace) killDaemonAtCleanup() {
	w.daemonCleanup.Do(func() {
		w.t.Cleanup(func() {
			dir := w.path("data")
			owner, held, err := datadir.Inspect(dir)
			if err != nil || !held || owner.PID <= 0 {
				return
			}
			if w.t.Failed() {
				if b, err := os.ReadFile(datadir.LogPath(dir)); err == nil {
					w.t.Logf("durawait daemon log:\n%s", b)
				}
			}
			_ = syscall.Kill(owner.PID, syscall.SIGKILL)
			eventually(w.t, "the daemon to let the data dir go", func() bool {
				_, held, err := datadir.Inspect(dir)
				return err == nil && !held
			})
		})
	})
}

// daemonPIDs lists the running `durawait serve --daemon` processes of the
// workspace's data dir.
func (w *workspace) daemonPIDs() []int {
	w.t.Helper()
	var pids []int
	entries, err := os.ReadDir("/proc")
	require.NoError(w.t, err)
	for _, e := range entries {
		pid := atoi(e.Name())
		if pid <= 0 {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 0 && args[0] == bin.durawait && slices.Contains(args, "--daemon") && slices.Contains(args, w.path("data")) {
			if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && strings.Contains(string(stat), ") Z ") {
				continue // a zombie, already dead
			}
			pids = append(pids, pid)
		}
	}
	return pids
}
