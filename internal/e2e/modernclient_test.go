package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// modernClient speaks protocol 2026-07-28 over streamable HTTP in plain
// JSON-RPC, written from the specification and the tasks extension's
// (modelcontextprotocol/ext-tasks): no session, no initialize; each
// request carries its protocol version, its client and its capabilities in
// params._meta, and the standard headers (Mcp-Protocol-Version,
// Mcp-Method, Mcp-Name: a tool's name, a task's ID).
type modernClient struct {
	t     testing.TB
	url   string
	token string
	// tasks: the requests declare the tasks extension.
	tasks  bool
	nextID int
}

// rpcError is a JSON-RPC error.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// extTaskJSON is a task of the extension: a CreateTaskResult or a
// tasks/get result.
type extTaskJSON struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs *int64          `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result"`
	InputRequests  map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"inputRequests"`
}

// modern is a 2026-07-28 client of instance i presenting token ("": none),
// declaring the tasks extension when tasks.
func (i *instance) modern(t testing.TB, token string, tasks bool) *modernClient {
	return &modernClient{t: t, url: "http://" + i.http + "/mcp", token: token, tasks: tasks}
}

// request sends one request; name is the Mcp-Name header ("": none).
// It returns the HTTP status, the result and the error.
func (c *modernClient) request(method, name string, params map[string]any) (int, json.RawMessage, *rpcError) {
	c.t.Helper()
	caps := map[string]any{}
	if c.tasks {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "durawait-e2e-modern", "version": "1.0.0"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	c.nextID++
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method, "params": params})
	require.NoError(c.t, err)
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(string(body)))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	require.NoError(c.t, json.Unmarshal(lastSSEData(raw), &out), "%s: %s", resp.Status, raw)
	if out.Error != nil {
		// As the streamable HTTP transport of 2026-07-28 answers a
		// request's own error: 404 for an unknown method, else 400.
		want := http.StatusBadRequest
		switch out.Error.Code {
		case -32601:
			want = http.StatusNotFound
		case -32603:
			want = http.StatusOK
		}
		require.Equal(c.t, want, resp.StatusCode, "the HTTP status of error %d", out.Error.Code)
	} else {
		require.Equal(c.t, http.StatusOK, resp.StatusCode, string(raw))
	}
	return resp.StatusCode, out.Result, out.Error
}

// lastSSEData is the JSON of a response: the body itself, or the data of
// the last event of an SSE stream.
func lastSSEData(raw []byte) []byte {
	s := string(raw)
	if !strings.Contains(s, "data:") {
		return raw
	}
	var last string
	for line := range strings.SplitSeq(s, "\n") {
		if data, ok := strings.CutPrefix(line, "data:"); ok {
			last = strings.TrimSpace(data)
		}
	}
	return []byte(last)
}

// call calls a tool; it returns the result, or the JSON-RPC error.
func (c *modernClient) call(tool string, args map[string]any) (json.RawMessage, *rpcError) {
	c.t.Helper()
	_, result, rerr := c.request("tools/call", tool, map[string]any{"name": tool, "arguments": args})
	return result, rerr
}

// task sends a task method for taskID (Mcp-Name set to it); it returns
// the result, or the JSON-RPC error.
func (c *modernClient) task(method, taskID string, extra map[string]any) (json.RawMessage, *rpcError) {
	c.t.Helper()
	params := map[string]any{"taskId": taskID}
	for k, v := range extra {
		params[k] = v
	}
	_, result, rerr := c.request(method, taskID, params)
	return result, rerr
}

// get reads a task, failing the test on an error.
func (c *modernClient) get(taskID string) extTaskJSON {
	c.t.Helper()
	result, rerr := c.task("tasks/get", taskID, nil)
	require.Nil(c.t, rerr, "tasks/get %s: %+v", taskID, rerr)
	var task extTaskJSON
	require.NoError(c.t, json.Unmarshal(result, &task), string(result))
	require.Equal(c.t, "complete", task.ResultType, string(result))
	return task
}

func (e *rpcError) String() string {
	if e == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%d %s", e.Code, e.Message)
}
