package e2e

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// everythingDir holds the pinned @modelcontextprotocol/server-everything,
// the reference MCP test server, run here as a legacy SSE server.
const everythingDir = "everything"

var everythingOnce sync.Once

// everythingSSE starts server-everything in SSE mode on a free port and
// returns its SSE URL. It installs the package (npm ci, from the committed
// lock file) on first use.
func everythingSSE(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed for the server-everything tests (.ci/run installs it)")
	main := filepath.Join("node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	everythingOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(everythingDir, main)); err == nil {
			return
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = everythingDir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "npm ci: %s", out)
	})
	addr := freeAddr(t)
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	logs := &syncBuffer{}
	cmd := exec.Command(node, main, "sse")
	cmd.Dir = everythingDir
	cmd.Env = append(os.Environ(), "PORT="+port)
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("server-everything log:\n%s", logs.String())
		}
	})
	eventually(t, "server-everything listening", func() bool {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	})
	return "http://" + addr + "/sse"
}

// toolListRecorder keeps the raw result of every tools/list a client gets:
// mcp-go's client decodes schemas into types that drop keys, so comparing
// schemas needs the JSON as sent.
type toolListRecorder struct {
	mu    sync.Mutex
	pages []json.RawMessage
}

func (r *toolListRecorder) send(ctx context.Context, t transport.Interface, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	res, err := t.SendRequest(ctx, req)
	if err == nil && res != nil && req.Method == string(mcp.MethodToolsList) {
		r.mu.Lock()
		r.pages = append(r.pages, res.Result)
		r.mu.Unlock()
	}
	return res, err
}

// schemas lists tools through c and returns each tool's raw schemas, by
// name, decoded into any.
func (r *toolListRecorder) schemas(t *testing.T, c *mcpClient) map[string]map[string]any {
	t.Helper()
	r.mu.Lock()
	r.pages = nil
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	require.NoError(t, err)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]map[string]any{}
	for _, page := range r.pages {
		var list struct {
			Tools []struct {
				Name         string `json:"name"`
				InputSchema  any    `json:"inputSchema"`
				OutputSchema any    `json:"outputSchema"`
			} `json:"tools"`
		}
		require.NoError(t, json.Unmarshal(page, &list))
		for _, tool := range list.Tools {
			out[tool.Name] = map[string]any{"inputSchema": tool.InputSchema, "outputSchema": tool.OutputSchema}
		}
	}
	return out
}

type recordedSSE struct {
	*transport.SSE
	rec *toolListRecorder
}

func (t recordedSSE) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	return t.rec.send(ctx, t.SSE, req)
}

type recordedHTTP struct {
	*transport.StreamableHTTP
	rec *toolListRecorder
}

func (t recordedHTTP) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	return t.rec.send(ctx, t.StreamableHTTP, req)
}

// A legacy SSE server (issue 7): its tools are re-exposed and probed over
// one lasting connection, its progress reaches the caller, and its schemas
// are re-exposed unchanged.
func TestServerEverythingOverLegacySSE(t *testing.T) {
	sseURL := everythingSSE(t)
	w := newWorkspace(t)
	// Its echo tool is probed whether or not the server annotates it read-only.
	inst := w.startServe(w.writeConfig(server{name: "everything", url: sseURL, transport: "sse", probeTools: []string{"echo"}}))
	c := inst.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	t.Run("re-exposed call", func(t *testing.T) {
		res, err := c.call(ctx, "echo", map[string]any{"message": "hello"}, "")
		require.NoError(t, err)
		require.False(t, res.IsError, resultText(res))
		assert.Equal(t, "Echo: hello", resultText(res))
	})

	t.Run("wait_for", func(t *testing.T) {
		got := c.waitFor(t, map[string]any{
			"probe":        map[string]any{"tool": "echo", "args": map[string]any{"message": "READY"}},
			"until":        map[string]any{"matches": "READY"},
			"poll_sec":     1,
			"max_wait_sec": 30,
		})
		assert.Equal(t, "matched", got.Reason)
		assert.Equal(t, "Echo: READY", got.LastObservation)
		assert.Empty(t, got.ProbeError)
	})

	t.Run("progress", func(t *testing.T) {
		args := map[string]any{"duration": 0.3, "steps": 3}
		res, err := c.call(ctx, "trigger-long-running-operation", args, "everything-progress")
		require.NoError(t, err)
		require.False(t, res.IsError, resultText(res))
		got := c.progressOf("everything-progress")
		require.NotEmpty(t, got, "the downstream's progress reaches the caller under its own token")
		for i := 1; i < len(got); i++ {
			assert.Greater(t, got[i], got[i-1], "progress increases: %v", got)
		}

		// Without a token, nothing is relayed.
		res, err = c.call(ctx, "trigger-long-running-operation", args, "")
		require.NoError(t, err)
		require.False(t, res.IsError, resultText(res))
		c.mu.Lock()
		for token := range c.progress {
			assert.Equal(t, "everything-progress", token, "no progress for a call that asked for none")
		}
		c.mu.Unlock()
	})

	t.Run("schemas", func(t *testing.T) {
		directRec := &toolListRecorder{}
		sse, err := transport.NewSSE(sseURL)
		require.NoError(t, err)
		direct := directRec.schemas(t, initialize(t, client.NewClient(recordedSSE{SSE: sse, rec: directRec})))

		viaRec := &toolListRecorder{}
		httpT, err := transport.NewStreamableHTTP("http://" + inst.http + "/mcp")
		require.NoError(t, err)
		via := viaRec.schemas(t, initialize(t, client.NewClient(recordedHTTP{StreamableHTTP: httpT, rec: viaRec})))

		long := direct["trigger-long-running-operation"]["inputSchema"].(map[string]any)
		require.Contains(t, long, "$schema", "the downstream schema has the keys this test is about")
		require.NotContains(t, long, "required")
		require.NotEmpty(t, direct)
		for name, want := range direct {
			assert.Equal(t, want, via[name], "tool %s is re-exposed with the downstream's schemas", name)
		}
	})

	connects := 0
	for _, line := range strings.Split(inst.log.String(), "\n") {
		if strings.Contains(line, "connected to downstream MCP server") && strings.Contains(line, "server=everything") {
			connects++
		}
	}
	assert.Equal(t, 1, connects, "one lasting connection, no reconnect storm")
}
