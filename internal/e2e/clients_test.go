package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The client matrix: each real MCP client, over each transport it has, goes
// through what a long-lived agent session does with durawait.

// matrixClient is one MCP client under test.
type matrixClient interface {
	// toolNames lists the tools.
	toolNames(ctx context.Context) ([]string, error)
	// waitFor calls wait_for with a progress token; an isError result is an
	// error with its text.
	waitFor(ctx context.Context, args map[string]any, token string) (waitResult, error)
	// progressMessages returns the messages of the progress notifications
	// received for token so far.
	progressMessages(token string) []string
}

// runClientMatrix checks one client: list tools; a wait that matches; a
// call cut off by the client's own deadline, then tools/list and the
// identical call again on the same client (re-attached: elapsed_sec counts
// from the first call); two concurrent calls with their own progress
// tokens, each receiving only its own notifications.
func runClientMatrix(t *testing.T, w *workspace, c matrixClient) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*testTimeout)
	defer cancel()

	t.Run("list tools", func(t *testing.T) {
		names, err := c.toolNames(ctx)
		require.NoError(t, err)
		assert.Contains(t, names, "wait_for")
		assert.Contains(t, names, "read_file")
	})

	t.Run("a wait that matches", func(t *testing.T) {
		w.write("build", "building")
		got := make(chan waitResult, 1)
		go func() {
			res, err := c.waitFor(ctx, readFileWait(w.path("build"), nil), "build")
			assert.NoError(t, err)
			got <- res
		}()
		eventually(t, "a progress notification", func() bool { return len(c.progressMessages("build")) > 0 })
		w.write("build", "READY")
		res := <-got
		assert.Equal(t, "matched", res.Reason)
		assert.Equal(t, "READY", res.LastObservation)
		assert.GreaterOrEqual(t, res.Samples, 2)
	})

	t.Run("a cut-off call, then the same call again on the same client", func(t *testing.T) {
		w.write("deploy", "deploying")
		args := readFileWait(w.path("deploy"), nil)
		first := time.Now()
		cut, cutCancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := c.waitFor(cut, args, "deploy-1")
		cutCancel()
		require.Error(t, err, "the client's own deadline cut the call off")

		names, err := c.toolNames(ctx)
		require.NoError(t, err, "the client still works after a cut-off call")
		assert.Contains(t, names, "wait_for")

		got := make(chan waitResult, 1)
		go func() {
			res, err := c.waitFor(ctx, args, "deploy-2")
			assert.NoError(t, err)
			got <- res
		}()
		eventually(t, "progress of the second call", func() bool { return len(c.progressMessages("deploy-2")) > 0 })
		again := time.Since(first)
		w.write("deploy", "READY")
		res := <-got
		assert.Equal(t, "matched", res.Reason)
		assert.GreaterOrEqual(t, res.ElapsedSec, again.Seconds()-1, "re-attached: elapsed_sec counts from the first call")
		assert.GreaterOrEqual(t, res.Samples, 3, "samples count from the first call")
	})

	t.Run("concurrent calls each get their own progress", func(t *testing.T) {
		w.write("alpha", "alpha-waiting")
		w.write("bravo", "bravo-waiting")
		var wg sync.WaitGroup
		for _, name := range []string{"alpha", "bravo"} {
			wg.Go(func() {
				res, err := c.waitFor(ctx, readFileWait(w.path(name), nil), "tok-"+name)
				assert.NoError(t, err)
				assert.Equal(t, "matched", res.Reason)
			})
		}
		eventually(t, "progress of both calls", func() bool {
			return len(c.progressMessages("tok-alpha")) >= 2 && len(c.progressMessages("tok-bravo")) >= 2
		})
		w.write("alpha", "READY")
		w.write("bravo", "READY")
		wg.Wait()
		for own, other := range map[string]string{"alpha": "bravo", "bravo": "alpha"} {
			msgs := c.progressMessages("tok-" + own)
			require.NotEmpty(t, msgs)
			for _, m := range msgs {
				assert.NotContains(t, m, other, "a notification of the %s call reached the %s call's token", other, own)
			}
			assert.Contains(t, strings.Join(msgs, "\n"), own+"-waiting")
		}
	})
}

// --- mcp-go's client ---

type mcpGoClient struct{ *mcpClient }

func (c mcpGoClient) toolNames(ctx context.Context) ([]string, error) {
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	names := make([]string, len(res.Tools))
	for i, tool := range res.Tools {
		names[i] = tool.Name
	}
	return names, nil
}

func (c mcpGoClient) waitFor(ctx context.Context, args map[string]any, token string) (waitResult, error) {
	res, err := c.call(ctx, "wait_for", args, token)
	if err != nil {
		return waitResult{}, err
	}
	if res.IsError {
		return waitResult{}, errors.New(resultText(res))
	}
	var out waitResult
	return out, json.Unmarshal(res.RawStructuredContent, &out)
}

func (c mcpGoClient) progressMessages(token string) []string { return c.messagesOf(token) }

func TestClientMatrixMCPGoOverHTTP(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)
	require.Equal(t, "2026-07-28", c.protocol, "mcp-go's client discovers the stateless era over HTTP")
	runClientMatrix(t, w, mcpGoClient{c})
}

func TestClientMatrixMCPGoOverStdio(t *testing.T) {
	w := newWorkspace(t)
	c, _ := w.stdioClient(w.writeConfig(w.demoServer("demo")))
	require.Equal(t, "2026-07-28", c.protocol, "the bridge carries the stateless era to the daemon")
	runClientMatrix(t, w, mcpGoClient{c})
}

// --- the official Go SDK (protocol 2026-07-28) ---

// goSDKVersion is the official Go SDK's version, as in go.mod.
const goSDKVersion = "v1.8.0"

type goSDKClient struct {
	session *sdkmcp.ClientSession
	mu      sync.Mutex
	msgs    map[string][]string
}

// connectGoSDK connects the official Go SDK's client over transport and
// checks the protocol version it negotiated.
func connectGoSDK(t *testing.T, transport sdkmcp.Transport, protocol string) *goSDKClient {
	t.Helper()
	c := &goSDKClient{msgs: map[string][]string{}}
	client := sdkmcp.NewClient(&sdkmcp.Implementation{Name: "durawait-e2e-gosdk", Version: goSDKVersion}, &sdkmcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdkmcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			defer c.mu.Unlock()
			token := fmt.Sprint(req.Params.ProgressToken)
			c.msgs[token] = append(c.msgs[token], req.Params.Message)
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	session, err := client.Connect(ctx, transport, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = session.Close() })
	require.Equal(t, protocol, session.InitializeResult().ProtocolVersion)
	c.session = session
	return c
}

func (c *goSDKClient) toolNames(ctx context.Context) ([]string, error) {
	res, err := c.session.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	return names, nil
}

func (c *goSDKClient) waitFor(ctx context.Context, args map[string]any, token string) (waitResult, error) {
	params := &sdkmcp.CallToolParams{Name: "wait_for", Arguments: args}
	params.SetProgressToken(token)
	res, err := c.session.CallTool(ctx, params)
	if err != nil {
		return waitResult{}, err
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return waitResult{}, err
	}
	if res.IsError {
		return waitResult{}, fmt.Errorf("isError: %s", b)
	}
	var out waitResult
	return out, json.Unmarshal(b, &out)
}

func (c *goSDKClient) progressMessages(token string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs[token]...)
}

func TestClientMatrixOfficialGoSDKOverHTTP(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	// Over HTTP the Go SDK speaks the stateless era, 2026-07-28.
	runClientMatrix(t, w, connectGoSDK(t, &sdkmcp.StreamableClientTransport{Endpoint: "http://" + inst.http + "/mcp", MaxRetries: -1}, "2026-07-28"))
}

// A client of the newest era that connects while durawait starts keeps that
// era. Its first request, server/discover, waits for the front end: a 503
// there would make the SDK fall back, as the 2026-07-28 spec says, to the
// 2025-11-25 handshake (the soak saw it 182 times in 1,000 restarts).
func TestAGoSDKClientThatConnectsWhileDurawaitStartsSpeaks20260728(t *testing.T) {
	w := newWorkspace(t)
	// The downstream server takes 3 s to start, so the client connects
	// well inside durawait's start.
	inst := w.launchServe(w.writeConfig(w.demoServerStartingIn("demo", 3*time.Second)), freeAddr(t), nil)
	eventually(t, "durawait's HTTP listener", func() bool {
		select {
		case <-inst.done:
			t.Fatalf("durawait exited during start-up:\n%s", inst.log.String())
		default:
		}
		resp, err := http.Get("http://" + inst.http + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		require.NotEqual(t, http.StatusOK, resp.StatusCode, "durawait was ready before the client could connect while it starts")
		return true
	})
	c := connectGoSDK(t, &sdkmcp.StreamableClientTransport{Endpoint: "http://" + inst.http + "/mcp", MaxRetries: -1}, "2026-07-28")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	names, err := c.toolNames(ctx)
	require.NoError(t, err)
	assert.Contains(t, names, "wait_for")
}

func TestClientMatrixOfficialGoSDKOverStdio(t *testing.T) {
	w := newWorkspace(t)
	w.killDaemonAtCleanup() // the stdio process bridges to a daemon it starts
	config := w.writeConfig(w.demoServer("demo"))
	cmd := exec.Command(bin.durawait, "serve", "--stdio", "--config", config, "--engine-port", "0", "--no-ui")
	cmd.Env = append(os.Environ(), w.env()...)
	cmd.Stderr = os.Stderr
	// The stdio process bridges to the daemon's HTTP endpoint, adding the
	// headers a 2026-07-28 request needs there: the SDK's server/discover
	// goes through, and it speaks the newest era over stdio too.
	runClientMatrix(t, w, connectGoSDK(t, &sdkmcp.CommandTransport{Command: cmd}, "2026-07-28"))
}

// With --no-daemon the stdio process serves everything itself, and the Go
// SDK speaks the newest era, 2026-07-28, over stdio (docs/clients.md).
func TestClientMatrixOfficialGoSDKOverStdioWithoutADaemon(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	cmd := exec.Command(bin.durawait, "serve", "--stdio", "--no-daemon", "--config", config, "--engine-port", "0", "--no-ui")
	cmd.Env = append(os.Environ(), w.env()...)
	cmd.Stderr = os.Stderr
	runClientMatrix(t, w, connectGoSDK(t, &sdkmcp.CommandTransport{Command: cmd}, "2026-07-28"))
}

// --- the official TypeScript SDK (protocol 2025-11-25, sessions) ---

// tsMatrixReport is what matrix.mjs saw.
type tsMatrixReport struct {
	ProtocolVersion string              `json:"protocolVersion"`
	Tools           []string            `json:"tools"`
	Match           waitResult          `json:"match"`
	CutOffError     string              `json:"cutOffError"`
	ToolsAfterCut   []string            `json:"toolsAfterCut"`
	Reattached      waitResult          `json:"reattached"`
	SinceFirstSec   float64             `json:"sinceFirstSec"`
	Concurrent      map[string]string   `json:"concurrent"`
	Progress        map[string][]string `json:"progress"`
}

func checkTSMatrix(t *testing.T, rep tsMatrixReport) {
	t.Helper()
	assert.Equal(t, "2025-11-25", rep.ProtocolVersion)
	assert.Contains(t, rep.Tools, "wait_for")
	assert.Equal(t, "matched", rep.Match.Reason)
	assert.GreaterOrEqual(t, rep.Match.Samples, 2)
	assert.NotEmpty(t, rep.CutOffError, "the client's own timeout cut the first call off")
	assert.Contains(t, rep.ToolsAfterCut, "wait_for", "the session still works after a cut-off call")
	assert.Equal(t, "matched", rep.Reattached.Reason)
	assert.GreaterOrEqual(t, rep.Reattached.ElapsedSec, rep.SinceFirstSec-1, "re-attached: elapsed_sec counts from the first call")
	assert.Equal(t, map[string]string{"alpha": "matched", "bravo": "matched"}, rep.Concurrent)
	for own, other := range map[string]string{"alpha": "bravo", "bravo": "alpha"} {
		msgs := rep.Progress["tok-"+own]
		require.NotEmpty(t, msgs, "progress of the %s call", own)
		for _, m := range msgs {
			assert.NotContains(t, m, other, "a notification of the %s call reached the %s call's token", other, own)
		}
	}
}

func TestClientMatrixOfficialTypeScriptSDKOverHTTP(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	var rep tsMatrixReport
	nodeScript(t, &rep, "matrix.mjs", "http", "http://"+inst.http+"/mcp", w.dir)
	checkTSMatrix(t, rep)
}

func TestClientMatrixOfficialTypeScriptSDKOverStdio(t *testing.T) {
	w := newWorkspace(t)
	w.killDaemonAtCleanup() // the stdio process bridges to a daemon it starts
	config := w.writeConfig(w.demoServer("demo"))
	var rep tsMatrixReport
	nodeScript(t, &rep, "matrix.mjs", "stdio", bin.durawait, config, w.dir)
	checkTSMatrix(t, rep)
}
