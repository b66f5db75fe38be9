package mcpwire

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func serveFront(t *testing.T, opts HTTPOptions) string {
	t.Helper()
	srv := httptest.NewServer(NewHTTPHandler(testServed(), "/mcp", opts))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

const pingBody = `{"jsonrpc":"2.0","id":7,"method":"ping"}`

func TestOrigin(t *testing.T) {
	loopback := serveFront(t, HTTPOptions{Loopback: true, AllowedOrigins: []string{"https://App.example.com"}})
	public := serveFront(t, HTTPOptions{AllowedOrigins: []string{"https://app.example.com"}})
	cases := []struct {
		name   string
		url    string
		origin string
		status int
	}{
		{"none sent", loopback, "", http.StatusOK},
		{"localhost on loopback", loopback, "http://localhost:6274", http.StatusOK},
		{"127.0.0.1 on loopback", loopback, "http://127.0.0.1:3000", http.StatusOK},
		{"[::1] on loopback", loopback, "http://[::1]:3000", http.StatusOK},
		{"allowlisted, other case and a slash", loopback, "https://app.example.COM/", http.StatusOK},
		{"foreign", loopback, "https://evil.example", http.StatusForbidden},
		{"foreign that names localhost", loopback, "https://localhost.evil.example", http.StatusForbidden},
		{"null", loopback, "null", http.StatusForbidden},
		{"not a URL", loopback, "localhost", http.StatusForbidden},
		{"file scheme", loopback, "file://localhost", http.StatusForbidden},
		{"none sent, public listener", public, "", http.StatusOK},
		{"allowlisted, public listener", public, "https://app.example.com", http.StatusOK},
		{"localhost, public listener", public, "http://localhost:6274", http.StatusForbidden},
		{"null, public listener", public, "null", http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.origin != "" {
				h["Origin"] = tc.origin
			}
			status, body, _ := post(t, tc.url, h, initializeBody)
			assert.Equal(t, tc.status, status, body)
		})
	}
	// GET and DELETE are checked too.
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, err := http.NewRequest(method, loopback, nil)
		require.NoError(t, err)
		req.Header.Set("Origin", "https://evil.example")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, method)
	}
}

func TestAuthenticateHook(t *testing.T) {
	seen := make(chan string, 1)
	f := testServed()
	f.MCP.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		seen <- PrincipalFrom(ctx)
		return mcp.NewToolResultText(PrincipalFrom(ctx)), nil
	})
	srv := httptest.NewServer(NewHTTPHandler(f, "/mcp", HTTPOptions{Loopback: true,
		Authenticate: func(w http.ResponseWriter, r *http.Request) (string, bool) {
			switch r.Header.Get("Authorization") {
			case "Bearer good":
				return "alice", true
			case "Bearer bob":
				return "bob", true
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="t"`)
			w.WriteHeader(http.StatusUnauthorized)
			return "", false
		}}))
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp"
	status, _, _ := post(t, url, nil, initializeBody)
	assert.Equal(t, http.StatusUnauthorized, status)
	auth := map[string]string{"Authorization": "Bearer good"}
	status, body, header := post(t, url, auth, initializeBody)
	require.Equal(t, http.StatusOK, status, body)
	auth["Mcp-Session-Id"] = header.Get("Mcp-Session-Id")
	auth[mcp.HeaderProtocolVersion] = "2025-11-25"
	status, body, _ = post(t, url, auth, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami"}}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, "alice", <-seen)

	// alice's session is not bob's: to him it is unknown.
	auth["Authorization"] = "Bearer bob"
	status, body, _ = post(t, url, auth, pingBody)
	assert.Equal(t, http.StatusNotFound, status, body)
}

func TestSessions(t *testing.T) {
	url := serveFront(t, HTTPOptions{Loopback: true})
	legacy := func(session string) map[string]string {
		return map[string]string{"Mcp-Session-Id": session, mcp.HeaderProtocolVersion: "2025-11-25"}
	}
	// An ID of the right form that was never issued.
	status, body, _ := post(t, url, legacy("mcp-session-1b4e28ba-2fa1-11d2-883f-0016d3cca427"), pingBody)
	assert.Equal(t, http.StatusNotFound, status, body)
	status, body, _ = post(t, url, legacy("made-up"), pingBody)
	assert.Equal(t, http.StatusNotFound, status, body)

	status, body, header := post(t, url, nil, initializeBody)
	require.Equal(t, http.StatusOK, status, body)
	session := header.Get("Mcp-Session-Id")
	require.NotEmpty(t, session)
	status, body, _ = post(t, url, legacy(session), pingBody)
	assert.Equal(t, http.StatusOK, status, body)

	del := func() int {
		req, err := http.NewRequest(http.MethodDelete, url, nil)
		require.NoError(t, err)
		for k, v := range legacy(session) {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	get := func(id string) int {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/event-stream")
		for k, v := range legacy(id) {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusNotFound, get("mcp-session-1b4e28ba-2fa1-11d2-883f-0016d3cca427"), "a GET stream of a session never issued")
	assert.Equal(t, http.StatusBadRequest, get(""), "a GET stream without a session (it would mint one nobody learns)")
	// durawait's own answers (tasks) see the same rule as mcp-go's.
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"taskId":"wait_for/x@y"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tasks/list","params":{}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait_for","arguments":{},"task":{}}}`,
	} {
		status, body, _ = post(t, url, legacy("mcp-session-1b4e28ba-2fa1-11d2-883f-0016d3cca427"), msg)
		assert.Equal(t, http.StatusNotFound, status, "%s: %s", msg, body)
	}
	assert.Equal(t, http.StatusOK, del())
	status, body, _ = post(t, url, legacy(session), pingBody)
	assert.Equal(t, http.StatusNotFound, status, "a deleted session: %s", body)
	assert.Equal(t, http.StatusNotFound, del(), "deleting it again")
}

func TestSessionTableExpiresAndBounds(t *testing.T) {
	now := time.Unix(0, 0)
	tab := newSessionTable(time.Hour, func() time.Time { return now })
	local := tab.view("")
	a := local.Generate()
	_, err := local.Validate(a + perCallSuffix + "3")
	assert.NoError(t, err, "a per-request ID of a live session")
	now = now.Add(59 * time.Minute)
	_, err = local.Validate(a)
	assert.NoError(t, err)
	_, err = tab.view("bob").Validate(a)
	assert.Error(t, err, "another principal's session is unknown to bob")
	_, _ = tab.view("bob").Terminate(a)
	_, err = local.Validate(a)
	assert.NoError(t, err, "nor can bob end it")
	now = now.Add(61 * time.Minute)
	_, err = local.Validate(a)
	assert.Error(t, err, "idle longer than the idle time")

	b := local.Generate()
	_, _ = local.Terminate(b + perCallSuffix + "1")
	_, err = local.Validate(b)
	assert.NoError(t, err, "ending one request's session ends nothing")
	_, _ = local.Terminate(b)
	terminated, _ := local.Validate(b)
	assert.True(t, terminated)

	// Expired entries are swept.
	now = now.Add(2 * time.Hour)
	local.Generate()
	tab.mu.Lock()
	assert.Len(t, tab.live, 1)
	assert.Empty(t, tab.ended)
	tab.mu.Unlock()
}

func TestBatchAndNullID(t *testing.T) {
	url := serveFront(t, HTTPOptions{Loopback: true})
	status, body, _ := post(t, url, nil, " ["+initializeBody+"]")
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, "batches")
	assert.Contains(t, body, `"code":-32600`)

	status, body, _ = post(t, url, nil, `{"jsonrpc":"2.0","id":null,"method":"ping"}`)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, "got null")

	// Over stdio.
	in := strings.Join([]string{
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	require.NoError(t, ServeStdio(context.Background(), testServed(), strings.NewReader(in), &out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3, out.String())
	type reply struct {
		ID    any `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	var replies []reply
	for _, l := range lines {
		var r reply
		require.NoError(t, json.Unmarshal([]byte(l), &r))
		replies = append(replies, r)
	}
	require.NotNil(t, replies[0].Error)
	assert.Contains(t, replies[0].Error.Message, "batches")
	require.NotNil(t, replies[1].Error)
	assert.Contains(t, replies[1].Error.Message, "got null")
	assert.Nil(t, replies[2].Error)
	assert.Equal(t, float64(3), replies[2].ID)
}
