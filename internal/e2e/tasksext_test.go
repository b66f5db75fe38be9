package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// extToolResult is a tool's result as a 2026-07-28 call answers it inline.
type extToolResult struct {
	ResultType        string          `json:"resultType"`
	TaskID            string          `json:"taskId"`
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Content           []struct {
		Text string `json:"text"`
	} `json:"content"`
}

func decodeExt[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var out T
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	return out
}

// The tasks extension of protocol 2026-07-28, spoken by a raw JSON-RPC
// client written from its specification, on a split deployment (a worker
// and two front ends with authentication on one Temporal): advertised in
// server/discover; a task tool's call answers inline when its wait ends at
// once and with a task otherwise; a tool that is not a task tool answers
// inline; the task is read from the other front end, refused to another
// principal as an unknown one, refused to a request that did not declare
// the extension (-32021), and outlives a kill -9 of the worker and of the
// front end that created it; a bad task ID, a wrong Mcp-Name and the
// 2025-11-25 methods are refused with the core's codes; tasks/update with
// no input outstanding and tasks/cancel are acknowledged, and a cancelled
// task reads cancelled.
func TestTasksExtensionOn20260728(t *testing.T) {
	w := newWorkspace(t)
	engine, _ := devServerWithSearchAttributes(t)
	workerConfig := w.writeConfigAt("worker.toml", w.path("worker-data"), "", w.demoServer("demo"))
	worker := w.startRole("worker", workerConfig, engine)
	frontConfig := func(name string) string {
		return w.withTokens(w.writeConfigAt(name+".toml", w.path(name+"-data"), ""))
	}
	a := w.startFront(frontConfig("front-a"), engine)
	b := w.startFront(frontConfig("front-b"), engine)
	for _, front := range []*instance{a, b} {
		c := front.clientAs(t, aliceToken)
		eventually(t, "the front to list the worker's tools", func() bool { return listedTools(t, c)["read_file"] != "" })
	}
	alice := a.modern(t, aliceToken, true)

	// server/discover advertises the extension.
	status, discovered, rerr := alice.request("server/discover", "", nil)
	require.Equal(t, http.StatusOK, status)
	require.Nil(t, rerr, rerr.String())
	assert.Contains(t, decodeExt[struct {
		Capabilities struct {
			Extensions map[string]any `json:"extensions"`
		} `json:"capabilities"`
	}](t, discovered).Capabilities.Extensions, "io.modelcontextprotocol/tasks", string(discovered))

	// A wait whose condition already holds answers inline, as would a
	// tool that is not a task tool.
	w.write("ready", "READY")
	raw, rerr := alice.call("wait_for", readFileWait(w.path("ready"), nil))
	require.Nil(t, rerr, rerr.String())
	inline := decodeExt[extToolResult](t, raw)
	assert.Equal(t, "complete", inline.ResultType)
	assert.Empty(t, inline.TaskID)
	assert.Equal(t, "matched", decodeExt[waitResult](t, inline.StructuredContent).Reason)
	raw, rerr = alice.call("read_file", map[string]any{"path": w.path("ready")})
	require.Nil(t, rerr, rerr.String())
	inline = decodeExt[extToolResult](t, raw)
	assert.Equal(t, "complete", inline.ResultType)
	assert.Empty(t, inline.TaskID)
	require.NotEmpty(t, inline.Content)
	assert.Contains(t, inline.Content[0].Text, "READY")

	// A wait that runs on is a task.
	w.write("job", "pending")
	raw, rerr = alice.call("wait_for", readFileWait(w.path("job"), map[string]any{"max_wait_sec": 120}))
	require.Nil(t, rerr, rerr.String())
	created := decodeExt[extTaskJSON](t, raw)
	assert.Equal(t, "task", created.ResultType, string(raw))
	assert.Equal(t, "working", created.Status)
	require.True(t, strings.HasPrefix(created.TaskID, "wait_for/"), created.TaskID)
	require.NotNil(t, created.TTLMs)
	assert.Positive(t, *created.TTLMs)
	require.NotNil(t, created.PollIntervalMs)
	assert.EqualValues(t, 1000, *created.PollIntervalMs, "the wait's poll_sec")
	assert.NotEmpty(t, created.CreatedAt)
	assert.Empty(t, created.Result)

	// A request that does not declare the extension is refused its
	// methods.
	_, rerr = a.modern(t, aliceToken, false).task("tasks/get", created.TaskID, nil)
	require.NotNil(t, rerr)
	assert.Equal(t, -32021, rerr.Code)
	assert.JSONEq(t, `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`, string(rerr.Data))

	// The other front end answers; another principal is told no such task.
	fromB := b.modern(t, aliceToken, true)
	got := fromB.get(created.TaskID)
	assert.Equal(t, "working", got.Status)
	assert.Equal(t, created.CreatedAt, got.CreatedAt)
	bob := b.modern(t, bobToken, true)
	for _, method := range []string{"tasks/get", "tasks/cancel"} {
		_, rerr = bob.task(method, created.TaskID, nil)
		require.NotNil(t, rerr, method)
		assert.Equal(t, -32602, rerr.Code, method)
		assert.Contains(t, rerr.Message, "no task", method)
	}

	// Bad task IDs, a wrong Mcp-Name, the methods of 2025-11-25.
	_, rerr = alice.task("tasks/get", "nonsense", nil)
	require.NotNil(t, rerr)
	assert.Equal(t, -32602, rerr.Code)
	assert.Contains(t, rerr.Message, `taskId: "nonsense" is not a task ID that durawait returned`)
	_, rerr = alice.task("tasks/get", strings.Split(created.TaskID, "@")[0]+"@01a24ab9-0000-7000-8000-000000000000", nil)
	require.NotNil(t, rerr)
	assert.Equal(t, -32602, rerr.Code)
	_, _, rerr = alice.request("tasks/get", "wait_for/another@task", map[string]any{"taskId": created.TaskID})
	require.NotNil(t, rerr)
	assert.Equal(t, -32020, rerr.Code, rerr.String())
	for _, method := range []string{"tasks/result", "tasks/list"} {
		_, rerr = alice.task(method, created.TaskID, nil)
		require.NotNil(t, rerr, method)
		assert.Equal(t, -32601, rerr.Code, method)
	}

	// kill -9 of the worker and of the front end that created the task;
	// the file flips; the other front end reads the task to its end.
	eventually(t, "a sample of the job", func() bool { return w.calls("job") >= 1 })
	worker.kill9()
	a.kill9()
	w.write("job", "READY at last")
	w.startRole("worker", workerConfig, engine)
	var done extTaskJSON
	eventually(t, "the task to end", func() bool { done = fromB.get(created.TaskID); return done.Status != "working" })
	assert.Equal(t, "completed", done.Status)
	result := decodeExt[extToolResult](t, done.Result)
	assert.Equal(t, "complete", result.ResultType)
	assert.False(t, result.IsError)
	ended := decodeExt[waitResult](t, result.StructuredContent)
	assert.Equal(t, "matched", ended.Reason)
	assert.Equal(t, "READY at last", ended.LastObservation)

	// tasks/update with no input outstanding is acknowledged and changes
	// nothing; so is tasks/cancel of a closed task.
	raw, rerr = fromB.task("tasks/update", created.TaskID, map[string]any{
		"inputResponses": map[string]any{"never-asked": map[string]any{"action": "accept", "content": map[string]any{}}},
	})
	require.Nil(t, rerr, rerr.String())
	assert.Equal(t, "complete", decodeExt[extToolResult](t, raw).ResultType)
	_, rerr = fromB.task("tasks/cancel", created.TaskID, nil)
	require.Nil(t, rerr, rerr.String())
	assert.Equal(t, "completed", fromB.get(created.TaskID).Status)

	// tasks/cancel of a running task: it reads cancelled.
	w.write("other", "pending")
	raw, rerr = fromB.call("wait_for", readFileWait(w.path("other"), map[string]any{"max_wait_sec": 120}))
	require.Nil(t, rerr, rerr.String())
	other := decodeExt[extTaskJSON](t, raw)
	require.Equal(t, "task", other.ResultType, string(raw))
	raw, rerr = fromB.task("tasks/cancel", other.TaskID, nil)
	require.Nil(t, rerr, rerr.String())
	assert.Equal(t, "complete", decodeExt[extToolResult](t, raw).ResultType)
	var cancelled extTaskJSON
	eventually(t, "the task to be cancelled", func() bool { cancelled = fromB.get(other.TaskID); return cancelled.Status != "working" })
	assert.Equal(t, "cancelled", cancelled.Status)
	assert.Empty(t, cancelled.Result)
}
