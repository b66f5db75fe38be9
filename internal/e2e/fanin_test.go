package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fanIn is wait_agent's answer on several invocations, as a client sees it.
type fanIn struct {
	payload
	Mode        string    `json:"mode"`
	Satisfied   bool      `json:"satisfied"`
	Invocations []payload `json:"invocations"`
}

// waitAgents calls wait_agent on ids with mode.
func (c *mcpClient) waitAgents(t testing.TB, mode string, ids ...string) fanIn {
	t.Helper()
	f, err := c.tryWaitAgents(mode, ids...)
	require.NoError(t, err)
	require.Len(t, f.Invocations, len(ids))
	for i, id := range ids {
		require.Equal(t, id, f.Invocations[i].InvocationID, "invocations in the order named")
	}
	return f
}

// tryWaitAgents calls wait_agent on ids with mode; it may run on any
// goroutine (it asserts nothing).
func (c *mcpClient) tryWaitAgents(mode string, ids ...string) (fanIn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	res, err := c.call(ctx, "wait_agent", map[string]any{"invocation_ids": ids, "mode": mode}, "")
	if err != nil {
		return fanIn{}, err
	}
	if res.IsError {
		return fanIn{}, fmt.Errorf("wait_agent failed: %s", resultText(res))
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return fanIn{}, err
	}
	var f fanIn
	return f, json.Unmarshal(raw, &f)
}

// fanInResult is a fan-in call's answer, from another goroutine.
type fanInResult struct {
	f   fanIn
	err error
}

// waitAgentsUntilMet calls wait_agent on ids with mode until the mode is
// met (a loaded machine may need more than one window), on a goroutine of
// its own; the test reads the answer from the channel.
func (c *mcpClient) waitAgentsUntilMet(mode string, ids ...string) <-chan fanInResult {
	out := make(chan fanInResult, 1)
	go func() {
		for calls := 0; ; calls++ {
			f, err := c.tryWaitAgents(mode, ids...)
			if err != nil || f.Satisfied || calls == 20 {
				out <- fanInResult{f: f, err: err}
				return
			}
		}
	}()
	return out
}

// met reads a fan-in's answer and requires that its mode was met.
func met(t testing.TB, results <-chan fanInResult) fanIn {
	t.Helper()
	r := <-results
	require.NoError(t, r.err)
	require.True(t, r.f.Satisfied, "the mode was never met: %+v", r.f)
	return r.f
}

// An orchestrator fans out three sub-agents and waits on them in one call:
// any answers with the first to finish (the others still running, their
// waits released), first_blocker with the first blocker (kept for nobody
// else: a wait_agent on it alone does not get it again), all once every
// one has answered; the window's end with the mode unmet says so. Another
// principal's ID, a repeated ID and a task are refused with the field's
// name. Whether a release comes before or after the fan-in's waits are
// taken does not matter: a finished invocation answers with its result,
// and a blocker not yet delivered wakes the next wait.
func TestWaitAgentFansInOnSeveralInvocations(t *testing.T) {
	w := newAgentWorkspace(t, 3)
	w.script("quick", `{"type":"system","subtype":"init","session_id":"{session}"}`, `@wait go-quick`,
		`{"type":"result","subtype":"success","is_error":false,"result":"quick done","session_id":"{session}"}`)
	w.script("asks", `{"type":"system","subtype":"init","session_id":"{session}"}`, `@wait go-asks`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"Claude requested permissions to use Write, but you haven't granted it yet."}]}}`,
		`@wait go-asks-end`,
		`{"type":"result","subtype":"success","is_error":false,"result":"asks done","session_id":"{session}"}`)
	w.script("slow", `{"type":"system","subtype":"init","session_id":"{session}"}`, `@wait go-slow`,
		`{"type":"result","subtype":"success","is_error":false,"result":"slow done","session_id":"{session}"}`)
	c := w.startServe(w.config).client(t)
	quick, asks, slow := c.startAgent(t, "fake", "quick", nil), c.startAgent(t, "fake", "asks", nil), c.startAgent(t, "fake", "slow", nil)

	// Nothing happens within the window: every one still runs.
	f := c.waitAgents(t, "any", quick, asks, slow)
	assert.False(t, f.Satisfied)
	assert.Equal(t, "any", f.Mode)
	assert.Equal(t, "wait_elapsed", f.Reason, "the top level says: call again")
	for _, p := range f.Invocations {
		assert.Equal(t, "running", p.Status)
		assert.Equal(t, "wait_elapsed", p.Reason)
	}

	// any: the first to finish decides; the others are released running.
	results := c.waitAgentsUntilMet("any", quick, asks, slow)
	w.release("go-quick")
	f = met(t, results)
	assert.Equal(t, quick, f.InvocationID)
	assert.Equal(t, "succeeded", f.Status)
	assert.Equal(t, "quick done", f.output())
	assert.Equal(t, "running", f.Invocations[1].Status)
	assert.Equal(t, "running", f.Invocations[2].Status)

	// first_blocker: a finished invocation does not meet it, a blocker
	// does.
	f = c.waitAgents(t, "first_blocker", quick, asks, slow)
	require.False(t, f.Satisfied, "first_blocker: a finished invocation alone does not meet it")
	results = c.waitAgentsUntilMet("first_blocker", quick, asks, slow)
	w.release("go-asks")
	f = met(t, results)
	assert.Equal(t, asks, f.InvocationID)
	assert.Equal(t, "execution_blocked", f.Reason)
	require.NotNil(t, f.Error)
	assert.Equal(t, "permission_denied", f.Error.Code)
	assert.Equal(t, "execution_blocked", f.Invocations[1].Reason)
	assert.Equal(t, "succeeded", f.Invocations[0].Status)
	alone := c.waitAgent(t, asks)
	assert.Equal(t, "wait_elapsed", alone.Reason, "the blocker was delivered once, to the fan-in")

	// all: once every one has finished.
	results = c.waitAgentsUntilMet("all", quick, asks, slow)
	w.release("go-asks-end")
	w.release("go-slow")
	f = met(t, results)
	for i, want := range []string{"quick done", "asks done", "slow done"} {
		assert.Equal(t, "succeeded", f.Invocations[i].Status)
		assert.Equal(t, want, f.Invocations[i].output())
	}

	// Refusals, each naming its field.
	bad := func(args map[string]any, want string) {
		t.Helper()
		res, err := c.call(context.Background(), "wait_agent", args, "")
		require.NoError(t, err)
		require.True(t, res.IsError)
		assert.Contains(t, resultText(res), want)
	}
	bad(map[string]any{"invocation_ids": []string{quick, quick}}, `invocation_ids[1]: repeats invocation_ids[0]`)
	bad(map[string]any{"invocation_ids": []string{quick, "agent/p0123456789abcdef01234567/00"}}, `invocation_ids[1]: "agent/p0123456789abcdef01234567/00" is not an invocation ID returned by start_agent`)
	bad(map[string]any{"invocation_ids": []string{quick}, "mode": "some"}, `mode: must be any, all or first_blocker`)
}
