package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
)

// jsonLines are the complete JSON log lines of log whose msg is msg and
// whose wait_id is waitID.
func jsonLines(t testing.TB, log, msg, waitID string) []map[string]any {
	t.Helper()
	var out []map[string]any
	end := strings.LastIndexByte(log, '\n')
	if end < 0 {
		return nil
	}
	for _, line := range strings.Split(log[:end], "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if m["msg"] == msg && m["wait_id"] == waitID {
			out = append(out, m)
		}
	}
	return out
}

// A split deployment (`durawait front` with authentication, and a worker
// in another process) names one wait alike everywhere: the workflow's
// search attributes (DurawaitCaller is the authenticated principal), the
// front's /events and log lines, and the worker's "wait ended" line.
func TestSplitFrontAndWorkerNameAWaitAlike(t *testing.T) {
	w := newWorkspace(t)
	worker := w.startServe(w.writeConfigWith(`log_format = "json"`, w.demoServer("demo")))
	engine := w.owner().Engine
	frontConfig := w.path("front.toml")
	require.NoError(t, os.WriteFile(frontConfig, []byte(fmt.Sprintf("data_dir = %q\nlog_format = \"json\"\n", w.path("front-data"))), 0o644))
	front := w.startFront(w.withTokens(frontConfig), engine)
	events := front.subscribe(t, "/events?tool=wait_for", aliceToken)
	c := front.clientAs(t, aliceToken)
	eventually(t, "the front to list the worker's tools", func() bool { return listedTools(t, c)["read_file"] != "" })

	w.write("job", "READY")
	res := c.waitFor(t, readFileWait(w.path("job"), nil))
	assert.Equal(t, "matched", res.Reason)

	// /events: the call's start names its wait and caller, its end the
	// outcome.
	started := events.next()
	require.Equal(t, "durawait.tool_call.started", started.Type)
	assert.Equal(t, "alice", started.Principal)
	assert.Equal(t, "started", started.WaitStart)
	assert.Equal(t, "durawait-e2e/1", started.Client)
	id := started.WaitID
	require.True(t, strings.HasPrefix(id, "wait_for/"), id)
	ended := events.next()
	for ended.Type != "durawait.tool_call.ended" {
		ended = events.next()
	}
	assert.Equal(t, "matched", ended.Outcome)
	assert.Equal(t, id, ended.WaitID)

	// The start attributes: an authenticated caller is found by its
	// principal; the state is the worker's.
	tc := temporalClient(t, engine)
	query := fmt.Sprintf("WorkflowId = '%s' AND DurawaitCaller = 'alice' AND DurawaitTool = 'wait_for' AND DurawaitState = 'matched' AND DurawaitClient = '%s'",
		id, started.Client)
	eventually(t, "the wait found by its attributes", func() bool {
		resp, err := tc.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: query})
		return err == nil && resp.GetCount() == 1
	})

	// The front's lines and the worker's: one caller object, the same
	// values as the events' (the session is empty: the e2e client speaks
	// 2026-07-28, which has none).
	eventually(t, "the front's end line and the worker's", func() bool {
		return len(jsonLines(t, front.log.String(), "wait call ended", id)) == 1 &&
			len(jsonLines(t, worker.log.String(), "wait ended", id)) == 1
	})
	want := map[string]any{"principal": "alice", "client": started.Client, "session": started.Session}
	startLines := jsonLines(t, front.log.String(), "wait started", id)
	require.Len(t, startLines, 1, front.log.String())
	assert.Equal(t, want, startLines[0]["caller"])
	callEnd := jsonLines(t, front.log.String(), "wait call ended", id)[0]
	assert.Equal(t, want, callEnd["caller"])
	assert.Equal(t, "matched", callEnd["outcome"])
	workerEnd := jsonLines(t, worker.log.String(), "wait ended", id)[0]
	assert.Equal(t, want, workerEnd["caller"], "the worker reads the caller from the search attributes")
	assert.Equal(t, "matched", workerEnd["outcome"])
	assert.Equal(t, "wait_for", workerEnd["tool"])
	assert.Empty(t, jsonLines(t, front.log.String(), "wait ended", id), "the front runs no workflow")
}
