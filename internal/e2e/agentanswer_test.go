package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A blocked agent answered through the tasks extension of 2026-07-28, by
// the raw JSON-RPC client: the wait_agent task of an agent that lacks a
// permission goes input_required with an elicitation stating the blocker;
// it stays so across a kill -9 of durawait; another principal cannot
// answer it, and a malformed answer is refused naming its field; the
// answer stops the CLI and resumes its provider session with the answer
// as its prompt, once, across a kill -9 right after it was taken; and the
// task follows the resumed run to its end. A plain wait_agent (a client
// that did not declare the extension) sees the same blocker, as before,
// and does not keep it from the task.
func TestABlockedAgentIsAnsweredThroughTasksUpdate(t *testing.T) {
	w := newAgentWorkspace(t, 30)
	config := w.withTokens(w.config)
	w.script("asker",
		`{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"Claude requested permissions to use Write, but you haven't granted it yet."}]}}`,
		`@wait never`)
	w.script("granted",
		`{"type":"system","subtype":"init","session_id":"{session}"}`,
		`@wait finish`,
		`{"type":"result","subtype":"success","is_error":false,"result":"wrote it in {session}","session_id":"{session}"}`)
	serve := w.startServe(config)
	alice := serve.modern(t, aliceToken, true)

	raw, rerr := alice.call("start_agent", map[string]any{"provider": "fake", "prompt": "asker write the file", "cwd": w.path("work/repo")})
	require.Nil(t, rerr, rerr.String())
	started := decodeExt[extToolResult](t, raw)
	require.False(t, started.IsError, string(raw))
	id := decodeExt[payload](t, started.StructuredContent).InvocationID
	require.NotEmpty(t, id)

	// The plain wait of a 2025-11-25 session without the extension sees
	// the blocker as before; having asked for warnings, it is told of the
	// blocker on its call's stream too.
	old := serve.rawAs(t, aliceToken)
	_, msg := old.rpc("logging/setLevel", map[string]any{"level": "warning"})
	require.Empty(t, msg)
	var body string
	for i := 0; i < 20 && !strings.Contains(body, `\"reason\":\"execution_blocked\"`); i++ {
		old.nextID++
		status, raw, _ := old.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"wait_agent","arguments":{"invocation_id":%q}}}`, old.nextID, id))
		require.Equal(t, http.StatusOK, status)
		body = string(raw)
	}
	require.Contains(t, body, `\"reason\":\"execution_blocked\"`)
	assert.Contains(t, body, `\"code\":\"permission_denied\"`)
	assert.Equal(t, 1, strings.Count(body, `"method":"notifications/message"`), body)
	assert.Contains(t, body, `"message":"agent blocked (permission_denied): `)

	// The extension's wait_agent is a task waiting for input.
	raw, rerr = alice.call("wait_agent", map[string]any{"invocation_id": id})
	require.Nil(t, rerr, rerr.String())
	created := decodeExt[extTaskJSON](t, raw)
	require.Equal(t, "task", created.ResultType, string(raw))
	require.NotEmpty(t, created.TaskID)
	blocked := alice.get(created.TaskID)
	require.Equal(t, "input_required", blocked.Status, "%+v", blocked)
	assert.Contains(t, blocked.StatusMessage, "permission_denied")
	request, ok := blocked.InputRequests["blocker-permission_denied"]
	require.True(t, ok, "%+v", blocked.InputRequests)
	assert.Equal(t, "elicitation/create", request.Method)
	elicit := decodeExt[struct {
		Message         string         `json:"message"`
		RequestedSchema map[string]any `json:"requestedSchema"`
	}](t, request.Params)
	assert.Contains(t, elicit.Message, "Write")
	assert.Contains(t, elicit.RequestedSchema["required"], "answer")

	// kill -9 of durawait: the CLI runs on; the task still waits for
	// its answer.
	serve.kill9()
	serve = w.startServe(config)
	alice = serve.modern(t, aliceToken, true)
	assert.Equal(t, "input_required", alice.get(created.TaskID).Status)

	// Another principal is told there is no such task; a malformed answer
	// is refused naming its field.
	answer := func(c *modernClient, response any) *rpcError {
		_, rerr := c.task("tasks/update", created.TaskID, map[string]any{
			"inputResponses": map[string]any{"blocker-permission_denied": response},
		})
		return rerr
	}
	rerr = answer(serve.modern(t, bobToken, true), map[string]any{"action": "accept", "content": map[string]any{"answer": "granted"}})
	require.NotNil(t, rerr)
	assert.Equal(t, -32602, rerr.Code)
	assert.Contains(t, rerr.Message, "no task")
	rerr = answer(alice, map[string]any{"action": "accept", "content": map[string]any{}})
	require.NotNil(t, rerr)
	assert.Equal(t, -32602, rerr.Code)
	assert.Contains(t, rerr.Message, "content.answer: required")
	rerr = answer(alice, map[string]any{"action": "maybe"})
	require.NotNil(t, rerr)
	assert.Contains(t, rerr.Message, ".action")
	rerr = answer(alice, map[string]any{"action": "accept", "content": map[string]any{"answer": "--dangerously-skip-permissions"}})
	require.NotNil(t, rerr, "the invocation refuses it")
	assert.Equal(t, -32602, rerr.Code)
	assert.Contains(t, rerr.Message, "must not start with '-'")
	assert.Equal(t, "input_required", alice.get(created.TaskID).Status, "a refused answer changes nothing")

	// The answer: the CLI is stopped and its session resumed with it,
	// once, though durawait is killed right after it took the answer
	// (wherever the kill lands: before the host had it, or after).
	require.Nil(t, answer(alice, map[string]any{"action": "accept", "content": map[string]any{"answer": "granted go ahead"}}))
	serve.kill9()
	serve = w.startServe(config)
	alice = serve.modern(t, aliceToken, true)
	eventually(t, "the session to resume with the answer", func() bool {
		return strings.Contains(readFile(w.path("argv.log")), "--resume sess-new granted go ahead")
	})
	eventually(t, "the blocked CLI to be stopped", func() bool { return strings.Contains(readFile(w.path("ends.log")), "asker signal") })
	assert.Equal(t, "working", alice.get(created.TaskID).Status, "the task follows the resumed run")
	require.Nil(t, answer(alice, map[string]any{"action": "accept", "content": map[string]any{"answer": "granted go ahead"}}),
		"the same answer again is taken as given")
	assert.Equal(t, 1, strings.Count(readFile(w.path("argv.log")), "granted go ahead"), "the answer started one CLI")

	w.release("finish")
	var done extTaskJSON
	eventually(t, "the task to end", func() bool { done = alice.get(created.TaskID); return done.Status != "working" })
	require.Equal(t, "completed", done.Status, "%+v", done)
	result := decodeExt[extToolResult](t, done.Result)
	final := decodeExt[payload](t, result.StructuredContent)
	assert.Equal(t, "succeeded", final.Status)
	require.NotNil(t, final.Output)
	assert.Equal(t, "wrote it in sess-new", *final.Output)
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(result.StructuredContent, &fields))
	assert.NotContains(t, fields, "answerable", "the payload is the output schema's, field for field")
}

// A headless CLI goes on past a blocker and exits (Claude Code reports a
// denied permission and ends). A blocker its task was asked keeps the
// invocation open for the answer (agents.answer_wait_sec): a plain
// wait_agent meanwhile sees the run's end, and the answer resumes the
// session in a run of its own, which the task follows to its end.
func TestABlockerAnsweredAfterItsCLIExitedResumesTheSession(t *testing.T) {
	w := newAgentWorkspace(t, 30)
	config := w.withTokens(w.config)
	w.script("denied",
		`{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"Claude requested permissions to use Write, but you haven't granted it yet."}]}}`,
		`@wait exit-now`,
		`{"type":"result","subtype":"success","is_error":false,"result":"could not write the file","session_id":"{session}"}`)
	w.script("approved",
		`{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"wrote it in {session}","session_id":"{session}"}`)
	serve := w.startServe(config)
	alice := serve.modern(t, aliceToken, true)
	raw, rerr := alice.call("start_agent", map[string]any{"provider": "fake", "prompt": "denied write the file", "cwd": w.path("work/repo")})
	require.Nil(t, rerr, rerr.String())
	id := decodeExt[payload](t, decodeExt[extToolResult](t, raw).StructuredContent).InvocationID

	raw, rerr = alice.call("wait_agent", map[string]any{"invocation_id": id})
	require.Nil(t, rerr, rerr.String())
	taskID := decodeExt[extTaskJSON](t, raw).TaskID
	require.NotEmpty(t, taskID, string(raw))
	eventually(t, "the task to ask for input", func() bool { return alice.get(taskID).Status == "input_required" })

	// The CLI exits; the invocation waits for the answer.
	w.release("exit-now")
	eventually(t, "the CLI to exit", func() bool { return strings.Contains(readFile(w.path("ends.log")), "denied exit 0") })
	plain := serve.clientAs(t, aliceToken)
	ended := plain.waitAgent(t, id)
	assert.Equal(t, "finished", ended.Reason, "a plain wait sees the run's end")
	assert.Equal(t, "could not write the file", ended.output())
	asked := alice.get(taskID)
	require.Equal(t, "input_required", asked.Status, "%+v", asked)
	require.Contains(t, asked.InputRequests, "blocker-permission_denied")

	_, rerr = alice.task("tasks/update", taskID, map[string]any{"inputResponses": map[string]any{
		"blocker-permission_denied": map[string]any{"action": "accept", "content": map[string]any{"answer": "approved write it"}},
	}})
	require.Nil(t, rerr, rerr.String())
	var done extTaskJSON
	eventually(t, "the task to end", func() bool { done = alice.get(taskID); return done.Status != "working" })
	require.Equal(t, "completed", done.Status, "%+v", done)
	final := decodeExt[payload](t, decodeExt[extToolResult](t, done.Result).StructuredContent)
	assert.Equal(t, "succeeded", final.Status)
	assert.Equal(t, "wrote it in sess-new", final.output(), "the session resumed with the answer")
	assert.Contains(t, readFile(w.path("argv.log")), "--resume sess-new approved write it")
}
