package mcpwire

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testServed is what the tests serve: a bare mcp-go server with the
// capabilities durawait's has (tools, tasks) and no own answers; each test
// adds the tools it calls.
func testServed() Served {
	return Served{MCP: server.NewMCPServer("durawait-test", "1",
		server.WithToolCapabilities(true), server.WithTaskCapabilities(true, true, true),
		server.WithToolHandlerMiddleware(ArgumentsGuard))}
}

// testHTTPServer serves testServed over a real HTTP listener, loopback
// rules, no authentication.
func testHTTPServer(t *testing.T) (Served, string) {
	t.Helper()
	s := testServed()
	srv := httptest.NewServer(NewHTTPHandler(s, "/mcp", HTTPOptions{Loopback: true}))
	t.Cleanup(srv.Close)
	return s, srv.URL + "/mcp"
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// post sends one JSON-RPC message and returns the status and body.
func post(t *testing.T, url string, header map[string]string, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp.Header
}

func TestModernNotificationsWithoutMetaAreAccepted(t *testing.T) {
	_, url := testHTTPServer(t)
	modern := map[string]string{mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728}
	legacy := map[string]string{mcp.HeaderProtocolVersion: "2025-11-25"}
	cases := []struct {
		name   string
		header map[string]string
		body   string
		status int
	}{
		{"modern cancelled without _meta (the official Go SDK's)", modern,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"context deadline exceeded"}}`, http.StatusAccepted},
		{"modern notification without params", modern, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, http.StatusAccepted},
		{"modern notification with an empty _meta", modern,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"_meta":{}}}`, http.StatusAccepted},
		{"modern, wrong jsonrpc version", modern, `{"jsonrpc":"1.0","method":"notifications/cancelled","params":{}}`, http.StatusBadRequest},
		{"modern, params not an object", modern, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}`, http.StatusBadRequest},
		{"modern, _meta not an object", modern, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":"x"}}`, http.StatusBadRequest},
		{"modern, method not a string", modern, `{"jsonrpc":"2.0","method":7}`, http.StatusBadRequest},
		{"modern, empty method", modern, `{"jsonrpc":"2.0","method":""}`, http.StatusBadRequest},
	}
	status, body, header := post(t, url, nil, initializeBody)
	require.Equal(t, http.StatusOK, status, body)
	legacy["Mcp-Session-Id"] = header.Get("Mcp-Session-Id")
	cases = append(cases, struct {
		name   string
		header map[string]string
		body   string
		status int
	}{"legacy cancelled", legacy, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`, http.StatusAccepted})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := post(t, url, tc.header, tc.body)
			assert.Equal(t, tc.status, status, "body: %s", body)
		})
	}
}

// The documented limit (docs/clients.md, docs/limits.md): a body of 8 MiB
// is read, one byte more is refused with 413.
func TestRequestBodyLimit(t *testing.T) {
	_, url := testHTTPServer(t)
	const documented = 8 << 20
	body := func(size int) string {
		head := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"},"pad":"`
		tail := `"}}`
		return head + strings.Repeat("x", size-len(head)-len(tail)) + tail
	}
	status, out, _ := post(t, url, nil, body(documented))
	assert.Equal(t, http.StatusOK, status, "a body of exactly 8 MiB is served: %.200s", out)
	status, _, _ = post(t, url, nil, body(documented+1))
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
}

// TestProgressGoesToItsOwnRequestStream holds two tool calls in flight on
// one 2025-11-25 session, each sending progress for its own token, and reads
// both SSE response streams as they arrive: each must carry its own
// notifications and no other's. Each handler sends its next notification
// only once some stream has delivered the previous one, so none is in
// flight when a handler returns (mcp-go may drop such a one).
func TestProgressGoesToItsOwnRequestStream(t *testing.T) {
	f, url := testHTTPServer(t)
	const perCall = 5
	tokens := []string{"A", "B"}
	delivered := map[string]chan struct{}{"A": make(chan struct{}, perCall), "B": make(chan struct{}, perCall)}
	var started sync.WaitGroup
	started.Add(len(tokens))
	f.MCP.AddTool(mcp.NewTool("chatty"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started.Done()
		started.Wait() // both calls are in flight
		token := fmt.Sprint(req.Params.Meta.ProgressToken)
		for i := 1; i <= perCall; i++ {
			if err := f.MCP.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
				"progressToken": token, "progress": i, "total": perCall, "message": fmt.Sprintf("step %d of %s", i, token)}); err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			select {
			case <-delivered[token]:
			case <-time.After(10 * time.Second):
				return mcp.NewToolResultError(fmt.Sprintf("progress %d of %s never reached a stream", i, token)), nil
			}
		}
		return mcp.NewToolResultText("done"), nil
	})

	status, body, header := post(t, url, nil, initializeBody)
	require.Equal(t, http.StatusOK, status, body)
	session := header.Get("Mcp-Session-Id")
	require.NotEmpty(t, session)

	streams := map[string][]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, token := range tokens {
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(fmt.Sprintf(
				`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"chatty","_meta":{"progressToken":%q}}}`, i+2, token)))
			if !assert.NoError(t, err) {
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
			resp, err := http.DefaultClient.Do(req)
			if !assert.NoError(t, err) {
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				var n struct {
					Method string `json:"method"`
					Params struct {
						ProgressToken string `json:"progressToken"`
					} `json:"params"`
					Result *mcp.CallToolResult `json:"result"`
				}
				if !assert.NoError(t, json.Unmarshal([]byte(data), &n)) {
					return
				}
				if n.Method != "notifications/progress" {
					continue
				}
				mu.Lock()
				streams[token] = append(streams[token], n.Params.ProgressToken)
				mu.Unlock()
				delivered[n.Params.ProgressToken] <- struct{}{}
			}
		})
	}
	wg.Wait()
	for _, token := range tokens {
		assert.Len(t, streams[token], perCall, "stream of call %s: %v", token, streams[token])
		for _, got := range streams[token] {
			assert.Equal(t, token, got, "the stream of call %s carries another call's progress", token)
		}
	}
}

// A 2025-11-25 client's notifications/cancelled reaches the request it
// names, though the request runs on its own per-request session: the
// handler's context ends (the wait behind it runs on, as always).
// A huge integer id (mcp-go knows that request by a stand-in) is
// cancelled the same way.
func TestCancelReachesTheRequestItNames(t *testing.T) {
	for _, id := range []string{`"call-9"`, `123456789012345678901234567890`} {
		t.Run(id, func(t *testing.T) { cancelReachesTheRequest(t, id) })
	}
}

func cancelReachesTheRequest(t *testing.T, id string) {
	f, url := testHTTPServer(t)
	started, ended := make(chan struct{}), make(chan struct{})
	f.MCP.AddTool(mcp.NewTool("block"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(started)
		<-ctx.Done()
		close(ended)
		return nil, ctx.Err()
	})
	status, body, header := post(t, url, nil, initializeBody)
	require.Equal(t, http.StatusOK, status, body)
	session := map[string]string{"Mcp-Session-Id": header.Get("Mcp-Session-Id"), mcp.HeaderProtocolVersion: "2025-11-25"}

	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"block"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range session {
			req.Header.Set(k, v)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	status, body, _ = post(t, url, session, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`,"reason":"timeout"}}`)
	assert.Equal(t, http.StatusAccepted, status, body)
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled request's handler is still running")
	}
}
