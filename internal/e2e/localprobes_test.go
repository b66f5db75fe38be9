package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With no downstream server configured, durawait still offers wait_for on
// its built-in probes: a wait on a port that opens later matches once it
// opens, an HTTP health endpoint is probed with its status line, and a
// target outside the policy (a cloud's metadata address) ends the wait at
// once with an error that names the argument and the rule.
func TestBuiltInProbesWorkWithNoServerConfigured(t *testing.T) {
	w := newWorkspace(t)
	w.write("status", "BUILD SUCCESS")
	c := w.startServe(w.writeConfigWith(fmt.Sprintf("[local]\npaths = [%q]\n", w.path("")))).client(t)
	ctx := context.Background()

	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	require.NoError(t, err)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	assert.Contains(t, names, "wait_for", "wait_for is offered with no server configured")
	assert.NotContains(t, names, "tcp_connect", "the built-in probes are wait_for's, not tools of their own")

	// A port that opens while the wait polls it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		res, err := c.call(ctx, "wait_for", map[string]any{
			"probe": map[string]any{"tool": "local.tcp_connect", "args": map[string]any{"port": port}},
			"until": map[string]any{"matches": "^open "}, "poll_sec": 1, "max_wait_sec": 120,
		}, "port-tok")
		if err != nil {
			res = mcp.NewToolResultError(err.Error())
		}
		done <- res
	}()
	eventually(t, "two samples of the closed port", func() bool { return len(c.progressOf("port-tok")) >= 2 })
	l, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	require.NoError(t, err)
	defer l.Close()
	res := <-done
	require.False(t, res.IsError, resultText(res))
	got := decodeWait(t, res)
	assert.Equal(t, "matched", got.Reason)
	assert.Equal(t, "open 127.0.0.1:"+strconv.Itoa(port), got.LastObservation)
	assert.GreaterOrEqual(t, got.Samples, 3)

	// An HTTP endpoint's status line.
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprint(rw, "ok") })}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(hl) }()
	defer srv.Close()
	// waitOn waits (poll 1 s, 30 s bound) on a built-in probe until its
	// output matches until.
	waitOn := func(tool string, args map[string]any, until string) *mcp.CallToolResult {
		t.Helper()
		res, err := c.call(ctx, "wait_for", map[string]any{
			"probe": map[string]any{"tool": tool, "args": args},
			"until": map[string]any{"matches": until}, "poll_sec": 1, "max_wait_sec": 30,
		}, "")
		require.NoError(t, err)
		return res
	}
	res = waitOn("http_request", map[string]any{"url": "http://" + hl.Addr().String() + "/healthz"}, "^HTTP 200")
	require.False(t, res.IsError, resultText(res))
	assert.Equal(t, "matched", decodeWait(t, res).Reason)

	// A file under local.paths.
	res = waitOn("file_read", map[string]any{"path": w.path("status")}, "SUCCESS")
	require.False(t, res.IsError, resultText(res))
	assert.Equal(t, "BUILD SUCCESS", decodeWait(t, res).LastObservation)

	// durawait's own data dir, inside local.paths here, is never read.
	res = waitOn("file_read", map[string]any{"path": w.path("data/durawait.lock")}, "x")
	require.True(t, res.IsError, "the data dir is refused: %s", resultText(res))
	assert.Contains(t, resultText(res), "durawait's own data: never read")

	// The metadata address: refused at the first sample.
	res = waitOn("http_request", map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}, "x")
	require.True(t, res.IsError, "a refused target ends the wait: %s", resultText(res))
	assert.Contains(t, resultText(res), "refused: url: 169.254.169.254 is a link-local address (where clouds serve instance metadata): never reached")
}

// A `durawait worker` runs waits for callers it cannot see (its front ends
// may be anywhere), so it does not run the built-in probes unless its
// config says local.enabled = true (config.LocalProbesOn's unit test):
// behind a loopback front, a wait on a built-in probe is refused with a
// named error.
func TestAWorkerRunsTheBuiltInProbesOnlyWhenItsConfigSaysSo(t *testing.T) {
	w := newWorkspace(t)
	engine, _ := devServerWithSearchAttributes(t)
	w.startRole("worker", w.writeConfigAt("worker.toml", w.path("worker-data"), "", w.demoServer("demo")), engine)
	front := w.startFront(w.writeConfigAt("front.toml", w.path("front-data"), ""), engine)
	c := front.client(t)
	eventually(t, "the front to list the worker's tools", func() bool { return listedTools(t, c)["read_file"] != "" })
	assert.Equal(t, map[string]string{"demo": "connected"}, downstreamHealth(t, front.http), "no built-in probes on a worker by default")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	wait := map[string]any{
		"probe": map[string]any{"tool": "local.tcp_connect", "args": map[string]any{"port": l.Addr().(*net.TCPAddr).Port}},
		"until": map[string]any{"matches": "^open "}, "poll_sec": 1, "max_wait_sec": 30,
	}
	refused := c.waitForRaw(t, wait)
	require.True(t, refused.IsError, resultText(refused))
	assert.Contains(t, resultText(refused), "local")
}
