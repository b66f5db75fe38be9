package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/workflows"
)

const (
	aliceToken = "alice-e2e-token-0123456789abcdef"
	bobToken   = "bob-e2e-token-0123456789abcdef"
)

// withTokens adds an [auth] table with a tokens file for alice and bob to
// the workspace's config.
func (w *workspace) withTokens(config string) string {
	w.t.Helper()
	w.write("tokens.toml", fmt.Sprintf("[[token]]\nprincipal = \"alice\"\ntoken = %q\n\n[[token]]\nprincipal = \"bob\"\ntoken = %q\n", aliceToken, bobToken))
	require.NoError(w.t, os.Chmod(w.path("tokens.toml"), 0o600))
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(w.t, err)
	defer f.Close()
	_, err = fmt.Fprintf(f, "\n[auth]\ntokens_file = %q\n", w.path("tokens.toml"))
	require.NoError(w.t, err)
	return config
}

// clientAs connects an MCP client that presents token.
func (i *instance) clientAs(t testing.TB, token string) *mcpClient {
	t.Helper()
	c, err := client.NewStreamableHttpClient("http://"+i.http+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	require.NoError(t, err)
	return initialize(t, c)
}

// rawSession is a 2025-11-25 session spoken in plain JSON-RPC over HTTP.
type rawSession struct {
	t       testing.TB
	url     string
	header  map[string]string
	session string
	nextID  int
}

func (i *instance) rawAs(t testing.TB, token string) *rawSession {
	t.Helper()
	s := &rawSession{t: t, url: "http://" + i.http + "/mcp", header: map[string]string{"Authorization": "Bearer " + token}}
	status, _, h := s.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	require.Equal(t, http.StatusOK, status)
	s.session = h.Get("Mcp-Session-Id")
	require.NotEmpty(t, s.session)
	s.header["Mcp-Session-Id"] = s.session
	s.header["Mcp-Protocol-Version"] = "2025-11-25"
	return s
}

func (s *rawSession) post(body string) (int, []byte, http.Header) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range s.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return resp.StatusCode, b, resp.Header
}

// rpc sends one request and returns its result, or its error message.
func (s *rawSession) rpc(method string, params any) (json.RawMessage, string) {
	s.t.Helper()
	s.nextID++
	p, err := json.Marshal(params)
	require.NoError(s.t, err)
	status, body, _ := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, s.nextID, method, p))
	require.Equal(s.t, http.StatusOK, status, string(body))
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(s.t, json.Unmarshal(body, &resp), string(body))
	if resp.Error != nil {
		return nil, resp.Error.Message
	}
	return resp.Result, ""
}

func TestPrincipalsHaveTheirOwnWaits(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.withTokens(w.writeConfig(w.demoServer("demo"))))
	alice, alice2, bob := inst.clientAs(t, aliceToken), inst.clientAs(t, aliceToken), inst.clientAs(t, bobToken)
	w.write("job", "running")
	args := readFileWait(w.path("job"), nil)

	var wg sync.WaitGroup
	results := make([]waitResult, 3)
	for i, c := range []*mcpClient{alice, alice2, bob} {
		wg.Go(func() { results[i] = c.waitFor(t, args) })
	}
	// Two probe loops, one per principal, each past its first sample.
	eventually(t, "samples of both waits", func() bool { return w.calls("job") >= 4 })
	w.write("job", "READY")
	wg.Wait()

	for _, r := range results {
		assert.Equal(t, "matched", r.Reason)
	}
	assert.Equal(t, results[0], results[1], "alice's two calls attached to one wait")
	assert.Equal(t, w.calls("job"), results[0].Samples+results[2].Samples,
		"two probe loops, alice's and bob's, made every call: alice %d, bob %d samples", results[0].Samples, results[2].Samples)

	// alice's task is hers alone.
	ra, rb := inst.rawAs(t, aliceToken), inst.rawAs(t, bobToken)
	w.write("task-job", "running")
	created, msg := ra.rpc("tools/call", map[string]any{"name": "wait_for", "arguments": readFileWait(w.path("task-job"), nil), "task": map[string]any{}})
	require.Empty(t, msg)
	var ct struct {
		Task struct {
			TaskID string `json:"taskId"`
			Status string `json:"status"`
		} `json:"task"`
	}
	require.NoError(t, json.Unmarshal(created, &ct))
	taskID := ct.Task.TaskID
	require.NotEmpty(t, taskID)
	wf, run, _ := strings.Cut(taskID, "@")
	unknown := wf + "@" + strings.Repeat("0", len(run))
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		_, foreign := rb.rpc(method, map[string]any{"taskId": taskID})
		_, none := rb.rpc(method, map[string]any{"taskId": unknown})
		require.NotEmpty(t, foreign, method)
		assert.Equal(t, strings.ReplaceAll(none, unknown, "ID"), strings.ReplaceAll(foreign, taskID, "ID"),
			"%s of another principal's task answers like an unknown task", method)
	}
	listed := func(s *rawSession) string {
		res, msg := s.rpc("tasks/list", map[string]any{})
		require.Empty(t, msg)
		return string(res)
	}
	assert.NotContains(t, listed(rb), taskID)
	assert.Contains(t, listed(ra), taskID)
	got, msg := ra.rpc("tasks/get", map[string]any{"taskId": taskID})
	require.Empty(t, msg)
	assert.Contains(t, string(got), `"status":"working"`, "bob's cancel did not reach alice's task")
	w.write("task-job", "READY")
}

func TestPrincipalsHaveTheirOwnAgents(t *testing.T) {
	w := newAgentWorkspace(t, 2)
	w.withTokens(w.config)
	w.script("held",
		`{"type":"system","subtype":"init","session_id":"{session}"}`,
		`@wait go-held`,
		`{"type":"result","subtype":"success","is_error":false,"result":"Done.","session_id":"{session}"}`)
	w.script("quick",
		`{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"Quick.","session_id":"{session}"}`)
	inst := w.startServe(w.config)
	alice, bob := inst.clientAs(t, aliceToken), inst.clientAs(t, bobToken)
	cwd := map[string]any{"cwd": w.path("work/repo")}
	keyed := map[string]any{"cwd": w.path("work/repo"), "request_id": "shared-key"}
	aliceID := alice.startAgent(t, "fake", "held", keyed)
	bobID := bob.startAgent(t, "fake", "quick", cwd)
	bobUnknown := bobID[:len(bobID)-4] + "0000"

	ids := func(c *mcpClient) []string {
		var out []string
		for _, l := range c.listAgents(t) {
			out = append(out, l.InvocationID)
		}
		return out
	}
	// The listing is Temporal's visibility store, which may lag a start.
	eventually(t, "both invocations listed", func() bool { return len(ids(alice)) > 0 && len(ids(bob)) > 0 })
	assert.Equal(t, []string{aliceID}, ids(alice))
	assert.Equal(t, []string{bobID}, ids(bob))

	answer := func(c *mcpClient, tool, id string) string {
		res, err := c.call(context.Background(), tool, map[string]any{"invocation_id": id}, "")
		require.NoError(t, err)
		require.True(t, res.IsError, "%s of %s: %s", tool, id, resultText(res))
		return strings.ReplaceAll(resultText(res), id, "ID")
	}
	for _, tool := range []string{"wait_agent", "cancel_agent"} {
		assert.Equal(t, answer(bob, tool, bobUnknown), answer(bob, tool, aliceID),
			"%s of another principal's invocation answers like an unknown one", tool)
	}
	// Around the front end, with the engine's credentials: a cancel signal
	// naming bob, or no one, is ignored by alice's invocation (its worker
	// checks the principal again). The wait after it is answered after the
	// signals were taken; a cancel that took would mark the run cancelled,
	// whatever its CLI did next, so the run's "succeeded" below is the
	// proof.
	tc := temporalClient(t, w.owner().Engine)
	for _, forged := range []any{workflows.AgentCancelRequest{Principal: "bob"}, nil} {
		require.NoError(t, tc.SignalWorkflow(context.Background(), aliceID, "", workflows.AgentCancelSignal, forged))
	}
	assert.Equal(t, "running", alice.waitAgent(t, aliceID).Status, "bob's cancel_agent did not stop alice's agent")
	assert.Equal(t, aliceID, alice.startAgent(t, "fake", "held", keyed), "alice's identical call is her invocation")
	assert.NotEqual(t, aliceID, bob.startAgent(t, "fake", "held", keyed),
		"bob's identical call with alice's request_id is his own invocation, not hers")
	w.release("go-held")
	assert.Equal(t, "succeeded", alice.waitUntilFinished(t, aliceID).Status)
}

func TestAuthRefusals(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.withTokens(w.writeConfig(w.demoServer("demo"))))
	post := func(header map[string]string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, "http://"+inst.http+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	resp := post(nil)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, `Bearer realm="durawait"`, resp.Header.Get("WWW-Authenticate"))

	resp = post(map[string]string{"Authorization": "Bearer not-a-token-of-anyone"})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`)

	resp = post(map[string]string{"Authorization": "Bearer " + aliceToken, "Origin": "https://evil.example"})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp = post(map[string]string{"Authorization": "Bearer " + aliceToken, "Origin": "http://localhost:6274"})
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a loopback origin on a loopback listener")
}

func TestServeOffLoopbackNeedsAuth(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	var out bytes.Buffer
	cmd := exec.Command(bin.durawait, serveArgs(config, "0.0.0.0:"+strings.Split(freeAddr(t), ":")[1])...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.Error(t, err, "durawait refuses to start")
	assert.Contains(t, out.String(), "is not a loopback address")
	assert.Contains(t, out.String(), "auth.tokens_file")
	assert.Contains(t, out.String(), "auth.jwks_url")
}

// The stdio daemon authenticates its callers with or without [auth] in its
// config: the stdio bridge gets in with the local token in the data dir, as
// the local user; a process that found the daemon's loopback port but cannot
// read the data dir gets 401.
func TestStdioBridgeAuthenticatesToTheDaemon(t *testing.T) {
	for _, withAuth := range []bool{true, false} {
		t.Run(fmt.Sprintf("auth=%v", withAuth), func(t *testing.T) {
			w := newWorkspace(t)
			config := w.writeConfig(w.demoServer("demo"))
			if withAuth {
				config = w.withTokens(config)
			}
			c, _ := w.stdioClient(config)
			w.write("job", "READY")
			assert.Equal(t, "matched", c.waitFor(t, readFileWait(w.path("job"), nil)).Reason)

			st, err := os.Stat(w.path("data/local.token"))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
			resp, err := http.Post(w.owner().HTTP, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the daemon asks anyone else for a token")

			token, err := os.ReadFile(w.path("data/local.token"))
			require.NoError(t, err)
			req, err := http.NewRequest(http.MethodPost, w.owner().HTTP, strings.NewReader(
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"local","version":"1"}}}`))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err = http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode, "the local token gets in")
		})
	}
}

// A wait_for_text that a task holds is not cancelled when a plain caller
// attached to it hangs up.
func TestWaitForTextHangUpSparesOtherCallers(t *testing.T) {
	tw := newTmuxWorld(t, 60)
	inst := tw.startServe(tw.config)
	c := inst.client(t)
	pane := listPanes(t, c)[0]
	args := map[string]any{"target": map[string]any{"paneId": pane.PaneID, "generation": pane.Generation}, "text": "HELD-UP"}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.call(ctx, "wait_for_text", args, "")
		done <- err
	}()
	eventually(t, "the control client to attach", func() bool { return tw.controlClients() == 1 })

	// The same wait as a task (no auth: every caller is the local user).
	raw := &rawSession{t: t, url: "http://" + inst.http + "/mcp", header: map[string]string{}}
	status, _, h := raw.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	require.Equal(t, http.StatusOK, status)
	raw.header["Mcp-Session-Id"] = h.Get("Mcp-Session-Id")
	raw.header["Mcp-Protocol-Version"] = "2025-11-25"
	created, msg := raw.rpc("tools/call", map[string]any{"name": "wait_for_text", "arguments": args, "task": map[string]any{}})
	require.Empty(t, msg)
	var ct struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	require.NoError(t, json.Unmarshal(created, &ct))

	cancel()
	require.Error(t, <-done)
	eventually(t, "durawait to handle the hang-up", func() bool {
		return strings.Contains(inst.log.String(), "wait_for_text: the caller hung up")
	})
	assert.Contains(t, inst.log.String(), "the wait runs on for the other callers attached")
	tw.typeLine(pane.PaneID, `printf '%s%s\n' HELD -UP`)
	res, msg := raw.rpc("tasks/result", map[string]any{"taskId": ct.Task.TaskID})
	require.Empty(t, msg)
	var r textResult
	var body struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	require.NoError(t, json.Unmarshal(res, &body))
	require.False(t, body.IsError, string(res))
	require.NoError(t, json.Unmarshal(body.StructuredContent, &r))
	assert.True(t, r.Matched, "the task's wait ran on after the other caller hung up")
}

// A session ID is unknown to a restarted durawait: the stdio bridge's next
// request gets 404, and the bridge initializes again by itself.
func TestSessionLostInARestartIsInitializedAgain(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	addr := freeAddr(t)
	first := w.startServeAt(config, addr)
	c, _ := w.stdioClient(config) // bridges to the running serve, the data dir's owner
	w.write("a", "READY")
	assert.Equal(t, "matched", c.waitFor(t, readFileWait(w.path("a"), nil)).Reason)

	first.kill9()
	w.startServeAt(config, addr) // knows no session of the first
	w.write("b", "READY")
	assert.Equal(t, "matched", c.waitFor(t, readFileWait(w.path("b"), nil)).Reason)
}

// JWTs from an identity provider: the principal is sub, so two tokens of
// one subject share a wait and another subject's is its own.
func TestJWTPrincipals(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: string(jose.ES256), Use: "sig"}}})
	}))
	t.Cleanup(idp.Close)
	token := func(sub, aud string) string {
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
		require.NoError(t, err)
		s, err := jwt.Signed(signer).Claims(jwt.Claims{
			Issuer: "https://idp.test", Audience: jwt.Audience{aud}, Subject: sub,
			Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour)), IssuedAt: jwt.NewNumericDate(time.Now()),
		}).Serialize()
		require.NoError(t, err)
		return s
	}

	w := newWorkspace(t)
	config := w.writeConfigWith(fmt.Sprintf("[auth]\njwks_url = %q\nissuer = \"https://idp.test\"\naudience = \"durawait\"\n", idp.URL), w.demoServer("demo"))
	inst := w.startServe(config)
	carol1, carol2, dave := inst.clientAs(t, token("carol", "durawait")), inst.clientAs(t, token("carol", "durawait")), inst.clientAs(t, token("dave", "durawait"))
	wrongAud := &rawSession{t: t, url: "http://" + inst.http + "/mcp", header: map[string]string{"Authorization": "Bearer " + token("carol", "other")}}
	status, _, h := wrongAud.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, h.Get("WWW-Authenticate"), "audience")

	w.write("job", "running")
	args := readFileWait(w.path("job"), nil)
	var wg sync.WaitGroup
	results := make([]waitResult, 3)
	for i, c := range []*mcpClient{carol1, carol2, dave} {
		wg.Go(func() { results[i] = c.waitFor(t, args) })
	}
	eventually(t, "samples of both waits", func() bool { return w.calls("job") >= 4 })
	w.write("job", "READY")
	wg.Wait()
	assert.Equal(t, results[0], results[1], "one subject, one wait")
	assert.Equal(t, w.calls("job"), results[0].Samples+results[2].Samples, "two subjects, two probe loops")
}

// A tokens file every user may change stops durawait at start, naming the
// mode; one every user may read is used, with a warning in the log.
func TestTokensFileModeAtStart(t *testing.T) {
	w := newWorkspace(t)
	config := w.withTokens(w.writeConfig(w.demoServer("demo")))
	tokens := w.path("tokens.toml")

	require.NoError(t, os.Chmod(tokens, 0o666))
	out := serveFails(t, w, config, "--engine-port", "0", "--no-ui")
	assert.Contains(t, out, "auth.tokens_file "+tokens+": mode 0666 lets every user of the machine change it, and so add a token of their own: chmod 600 it")

	require.NoError(t, os.Chmod(tokens, 0o644))
	inst := w.startServe(config)
	assert.Contains(t, inst.log.String(), "mode 0644 lets every user of the machine read its tokens: chmod 600 it")
	c := inst.clientAs(t, aliceToken)
	w.write("job", "READY")
	assert.Equal(t, "matched", c.waitFor(t, readFileWait(w.path("job"), nil)).Reason, "the tokens are in force")
}
