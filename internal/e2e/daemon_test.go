package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/internal/datadir"
)

// Three stdio sessions started at once with the same config all work, on
// one background daemon. Its log file is its owner's alone (0600) even when
// it was there before with wider permissions (docs/operations.md,
// "Privacy").
func TestStdioSessionsStartedAtOnceShareOneDaemon(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	logPath := datadir.LogPath(w.path("data"))
	require.NoError(t, os.MkdirAll(w.path("data"), 0o700))
	require.NoError(t, os.WriteFile(logPath, []byte("an earlier life\n"), 0o644))
	require.NoError(t, os.Chmod(logPath, 0o644))

	clients := make([]*mcpClient, 3)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() { clients[i], _ = w.stdioClient(config) })
	}
	wg.Wait()
	require.False(t, t.Failed(), "every session started")

	owner := w.owner()
	assert.Equal(t, []int{owner.PID}, w.daemonPIDs(), "exactly one daemon runs, and it owns the data dir")
	assert.NotEmpty(t, owner.Log, "the owner is the background daemon")
	info, err := os.Stat(logPath)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the daemon's log")

	results := make([]waitResult, len(clients))
	for i, c := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		cancel()
		require.NoError(t, err, "client %d lists tools", i)
		var names []string
		for _, tool := range tools.Tools {
			names = append(names, tool.Name)
		}
		assert.Contains(t, names, "wait_for", "client %d", i)

		file := fmt.Sprintf("job%d", i)
		w.write(file, "running")
		wg.Go(func() { results[i] = c.waitFor(t, readFileWait(w.path(file), nil)) })
		eventually(t, "a sample of "+file, func() bool { return w.calls(file) >= 1 })
		w.write(file, "READY")
	}
	wg.Wait()
	for i, r := range results {
		assert.Equal(t, "matched", r.Reason, "client %d", i)
	}
	assert.Equal(t, []int{owner.PID}, w.daemonPIDs(), "still one daemon")
}

// An identical wait_for from two stdio sessions is one wait: the second
// attaches, its progress flows through its bridge, and its elapsed time
// counts from the first call.
func TestIdenticalWaitFromTwoStdioSessionsIsShared(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	w.write("shared", "building")
	args := readFileWait(w.path("shared"), nil)

	c1, _ := w.stdioClient(config)
	first := time.Now()
	done1 := make(chan waitResult, 1)
	go func() { done1 <- c1.waitFor(t, args) }()
	eventually(t, "samples of the first call", func() bool { return w.calls("shared") >= 3 })

	c2, _ := w.stdioClient(config)
	second := time.Now()
	done2 := make(chan *waitResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		res, err := c2.call(ctx, "wait_for", args, "second")
		if !assert.NoError(t, err) || !assert.False(t, res.IsError, resultText(res)) {
			done2 <- nil
			return
		}
		r := decodeWait(t, res)
		done2 <- &r
	}()
	eventually(t, "progress on the second session", func() bool { return len(c2.progressOf("second")) >= 1 })
	w.write("shared", "READY")

	r1, r2 := <-done1, <-done2
	require.NotNil(t, r2)
	assert.Equal(t, "matched", r1.Reason)
	assert.Equal(t, "matched", r2.Reason)
	assert.GreaterOrEqual(t, r2.ElapsedSec, second.Sub(first).Seconds(), "elapsed counts from the first session's call")
	assert.Equal(t, r1.Samples, r2.Samples, "one wait, one count of samples")
	assert.LessOrEqual(t, w.calls("shared"), r1.Samples+1, "the probe's call log holds one wait's samples")
}

// A kill -9 of a stdio session loses nothing: its wait runs on in the
// daemon and another session picks it up.
func TestKilledStdioSessionLosesNoWait(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	w.write("deploy", "rolling out")
	args := readFileWait(w.path("deploy"), nil)

	c1, proc := w.stdioClient(config)
	daemon := w.owner().PID
	go func() { _, _ = c1.call(context.Background(), "wait_for", args, "") }()
	eventually(t, "samples before the kill", func() bool { return w.calls("deploy") >= 2 })
	require.NoError(t, proc.Signal(syscall.SIGKILL))
	_, _ = proc.Wait()
	before := w.calls("deploy")
	eventually(t, "the wait to go on with no session", func() bool { return w.calls("deploy") >= before+2 })

	c2, _ := w.stdioClient(config)
	done := make(chan waitResult, 1)
	go func() { done <- c2.waitFor(t, args) }()
	eventually(t, "a sample after the second call", func() bool { return w.calls("deploy") >= before+3 })
	w.write("deploy", "READY")
	res := <-done

	assert.Equal(t, "matched", res.Reason)
	assert.Greater(t, res.Samples, before, "samples from the killed session's time count")
	assert.Equal(t, daemon, w.owner().PID, "the same daemon serves on")
	assert.Equal(t, []int{daemon}, w.daemonPIDs())
}

// status and stop find the daemon through the config (status with no flag
// too), a foreground serve on its config is refused, and stop ends it.
func TestStatusAndStopOfTheDaemon(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	w.stdioClient(config)
	owner := w.owner()

	out, err := exec.Command(bin.durawait, "status", "--config", config).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), fmt.Sprintf("pid:       %d (background daemon, ready)", owner.PID))
	assert.Contains(t, string(out), owner.HTTP)
	assert.Contains(t, string(out), datadir.LogPath(w.path("data")))

	// With no flag, status finds it among every durawait of the user, and
	// says which flag reaches it.
	out, err = exec.Command(bin.durawait, "status").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), fmt.Sprintf("pid:       %d (background daemon, ready)", owner.PID))
	assert.Contains(t, string(out), "config:    "+config+"\n")
	assert.Contains(t, string(out), "reach it:  durawait status --config '"+config+"'  (stop: durawait stop --config '"+config+"')")

	// A foreground serve on the daemon's config is refused before it
	// listens, naming the daemon and how to stop it.
	fg := exec.Command(bin.durawait, "serve", "--config", config, "--http", "127.0.0.1:0")
	out, err = fg.CombinedOutput()
	require.Error(t, err, "%s", out)
	assert.Contains(t, string(out), fmt.Sprintf("is in use by the background daemon of stdio sessions (pid %d, config %s", owner.PID, config))
	assert.Contains(t, string(out), "stop it with `durawait stop --config '"+config+"'`")
	assert.NotContains(t, string(out), "msg=listening", "refused before it listens")

	out, err = exec.Command(bin.durawait, "stop", "--config", config).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), fmt.Sprintf("stopped durawait (pid %d)", owner.PID))
	assert.Empty(t, w.daemonPIDs())

	out, err = exec.Command(bin.durawait, "status", "--config", config).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.True(t, strings.HasPrefix(string(out), "no durawait runs on data dir"), "%s", out)
	_, err = os.Stat(datadir.LogPath(w.path("data")))
	assert.NoError(t, err, "the daemon's log stays")
}

// A daemon that dies (kill -9) under a live stdio session is started again
// by the session's next request, which re-initializes transparently; the
// wait that ran at the crash resumes and the same call picks it up.
func TestStdioSessionRestartsADeadDaemon(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	w.write("job", "running")
	args := readFileWait(w.path("job"), nil)

	c, _ := w.stdioClient(config)
	first := w.owner().PID
	go func() { _, _ = c.call(context.Background(), "wait_for", args, "") }()
	eventually(t, "samples before the crash", func() bool { return w.calls("job") >= 2 })
	require.NoError(t, syscall.Kill(first, syscall.SIGKILL))
	eventually(t, "the dead daemon to let the data dir go", func() bool {
		_, held, err := datadir.Inspect(w.path("data"))
		return err == nil && !held
	})
	before := w.calls("job")

	done := make(chan waitResult, 1)
	go func() { done <- c.waitFor(t, args) }()
	eventually(t, "samples after the restart", func() bool { return w.calls("job") >= before+2 })
	second := w.owner().PID
	assert.NotEqual(t, first, second, "a new daemon")
	w.write("job", "READY")
	res := <-done
	assert.Equal(t, "matched", res.Reason)
	assert.Greater(t, res.Samples, w.calls("job")-before, "samples from before the crash count")
	assert.Equal(t, []int{second}, w.daemonPIDs())
}

// A stdio session whose configuration differs from the daemon's on its
// data dir (another flag here; another config file on the same data dir,
// or the file's contents edited since) is refused, saying what differs and
// how to get its own, rather than silently served with the daemon's tools
// and flags; a session with the daemon's configuration shares it.
func TestAStdioSessionWithAnotherConfigurationThanTheDaemonsIsRefused(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	w.stdioClient(config)
	owner := w.owner()

	refused := func(session string, extra ...string) string {
		t.Helper()
		args := append([]string{"serve", "--stdio", "--config", session, "--engine-port", "0", "--no-ui"}, extra...)
		other := exec.Command(bin.durawait, args...)
		other.Env = append(os.Environ(), w.env()...)
		out, err := other.CombinedOutput()
		require.Error(t, err, "%s", out)
		assert.Contains(t, string(out), fmt.Sprintf("the durawait daemon on data dir %s (pid %d, `durawait serve --stdio --config %s", w.path("data"), owner.PID, config))
		assert.Contains(t, string(out), "Stop the daemon (durawait stop --config '"+config+"'")
		return string(out)
	}
	out := refused(config, "--tool", "wait_for_text")
	assert.Contains(t, out, "(`durawait serve --stdio --config "+config+" --engine-port 0 --no-ui --tool wait_for_text --daemon")
	assert.Contains(t, out, "they differ in tools.")

	// A real MCP client is told on the protocol too: a log notification
	// before initialize's answer, and the reason as initialize's error.
	tr := transport.NewStdio(bin.durawait, w.env(), "serve", "--stdio", "--config", config, "--engine-port", "0", "--no-ui", "--tool", "wait_for_text")
	c := client.NewClient(tr)
	var mu sync.Mutex
	var notices []string
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/message" && n.Params.AdditionalFields["level"] == "error" {
			mu.Lock()
			notices = append(notices, fmt.Sprint(n.Params.AdditionalFields["data"]))
			mu.Unlock()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(t, c.Start(ctx))
	_, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION}})
	require.Error(t, err, "a refused session does not initialize")
	assert.Contains(t, err.Error(), "they differ in tools.")
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(notices) == 1 }, testTimeout, 10*time.Millisecond)
	assert.Contains(t, notices[0], "Stop the daemon (durawait stop --config '"+config+"'")
	_ = c.Close() // the refused process exits 1 at stdin's end

	// Another project's config that names the same data dir.
	other := w.writeConfigAt("other.toml", w.path("data"), "hide_probe_arg_values = true\n")
	assert.Contains(t, refused(other), "they differ in config, hide_probe_arg_values, mcp_servers.")

	same, _ := w.stdioClient(config)
	list, err := same.ListTools(context.Background(), mcp.ListToolsRequest{})
	require.NoError(t, err, "a session with the daemon's configuration shares it")
	assert.NotEmpty(t, list.Tools)
	assert.Equal(t, []int{owner.PID}, w.daemonPIDs())
}

// With agents configured and no agents.path, the daemon finds the CLIs on
// the PATH of the session that started it; a session whose client gives it
// another PATH would run its agents with CLIs it did not pick, so it is
// refused, naming PATH and agents.path as the way to share one daemon.
func TestAStdioSessionWithAnotherPATHIsRefusedWhereAgentsUseIt(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfigWith(agentsTOML(w, 60))
	w.stdioClient(config)
	owner := w.owner()

	other := exec.Command(bin.durawait, "serve", "--stdio", "--config", config, "--engine-port", "0", "--no-ui")
	other.Env = append(os.Environ(), append(w.env(), "PATH="+w.path("bin")+":"+os.Getenv("PATH"))...)
	out, err := other.CombinedOutput()
	require.Error(t, err, "%s", out)
	assert.Contains(t, string(out), fmt.Sprintf("the durawait daemon on data dir %s (pid %d,", w.path("data"), owner.PID))
	assert.Contains(t, string(out), "they differ in PATH (the daemon finds agent CLIs on the PATH of the session that started it: set [agents] path")

	same := exec.Command(bin.durawait, "serve", "--stdio", "--config", config, "--engine-port", "0", "--no-ui")
	same.Env = append(os.Environ(), w.env()...)
	same.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
	out, err = same.Output()
	require.NoError(t, err, "the daemon's PATH: shared")
	assert.Contains(t, string(out), `"protocolVersion":"2025-11-25"`)
}
