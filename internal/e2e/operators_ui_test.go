package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/durawait/durawait/workflows"
)

// sdkConverterFromPayload decodes a payload Temporal stored (a memo field,
// a summary) as the SDK encodes it.
func sdkConverterFromPayload(p *commonpb.Payload, v any) error {
	return converter.GetDefaultDataConverter().FromPayload(p, v)
}

// operatorWorld is a durawait serve with the Web UI on, the demo probe,
// the fake agent CLI and a private tmux server: every kind of wait.
type operatorWorld struct {
	*workspace
	inst   *instance
	socket string
	engine string
	// ui is the Web UI's base URL; uiHTTP a client logged in to it.
	ui     string
	uiHTTP *http.Client
}

func newOperatorWorld(t *testing.T) *operatorWorld {
	_, err := exec.LookPath("tmux")
	require.NoError(t, err, "tmux is needed (apt-get install -y tmux)")
	w := &operatorWorld{workspace: newWorkspace(t)}
	w.socket = w.path("tmux.sock")
	out, err := exec.Command("tmux", "-S", w.socket, "new-session", "-d", "-s", "main", "-x", "120", "-y", "30", "sh").CombinedOutput()
	require.NoError(t, err, "tmux: %s", out)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", w.socket, "kill-server").Run() })
	require.NoError(t, os.MkdirAll(w.path("scripts"), 0o755))
	require.NoError(t, os.MkdirAll(w.path("work"), 0o755))
	agent, _ := json.Marshal([]string{bin.fakeagent, "--scripts", w.path("scripts"), "{prompt}"})
	extra := fmt.Sprintf("tools = [\"list_panes\", \"wait_for_text\"]\nretention_hours = 48\n\n[tmux]\nsocket = %q\nwait_max_sec = 120\n\n"+
		"[agents]\nwait_window_sec = 5\ncancel_grace_sec = 1\nallowed_roots = [%q]\n\n[agents.providers.fake]\nformat = \"claude-stream-json\"\ncommand = %s\n",
		w.socket, w.path("work"), agent)
	config := w.writeConfigWith(extra, w.demoServer("demo"))
	uiAddr := freeAddr(t)
	_, uiPort, _ := strings.Cut(uiAddr, ":")
	w.inst = w.startServeWith(config, freeAddr(t), w.env(), "--ui-port", uiPort)
	o := w.owner()
	require.NotEmpty(t, o.UI, "the Web UI runs")
	w.engine = o.Engine
	w.ui, w.uiHTTP = uiLogin(t, o.UI)
	return w
}

// found lists, through the engine's visibility API, the workflow IDs that
// query finds.
func found(t testing.TB, tc sdkclient.Client, query string) []string {
	t.Helper()
	resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
	require.NoError(t, err, query)
	var ids []string
	for _, e := range resp.Executions {
		ids = append(ids, e.Execution.WorkflowId)
	}
	return ids
}

// foundInUI lists the workflow IDs that query finds through the Web UI's
// HTTP API (the ui-server proxies /api/v1/namespaces/{ns}/workflows to the
// engine's ListWorkflowExecutions), as the UI's list does.
func foundInUI(t testing.TB, hc *http.Client, ui, query string) []string {
	t.Helper()
	resp, err := hc.Get(ui + "/api/v1/namespaces/default/workflows?query=" + url.QueryEscape(query))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, query)
	var body struct {
		Executions []struct {
			Execution struct {
				WorkflowID string `json:"workflowId"`
			} `json:"execution"`
		} `json:"executions"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	var ids []string
	for _, e := range body.Executions {
		ids = append(ids, e.Execution.WorkflowID)
	}
	return ids
}

// findEverywhere waits until query finds exactly want (in any order),
// through the visibility API and through the UI's HTTP API.
func (w *operatorWorld) findEverywhere(t *testing.T, tc sdkclient.Client, query string, want ...string) {
	t.Helper()
	sort.Strings(want)
	var got, inUI []string
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		got = found(t, tc, query)
		inUI = foundInUI(t, w.uiHTTP, w.ui, query)
		sort.Strings(got)
		sort.Strings(inUI)
		if assert.ObjectsAreEqual(want, got) && assert.ObjectsAreEqual(want, inUI) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, want, got, "visibility API: %s", query)
	assert.Equal(t, want, inUI, "UI HTTP API: %s", query)
	t.FailNow()
}

// callInBackground calls tool and delivers its result when it answers.
func callInBackground(c *mcpClient, tool string, args map[string]any) <-chan *mcp.CallToolResult {
	out := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		res, err := c.call(ctx, tool, args, "")
		if err != nil {
			res = mcp.NewToolResultError("call failed: " + err.Error())
		}
		out <- res
	}()
	return out
}

// An operator finds every running wait by each search attribute, through
// the engine's visibility API and the Web UI's HTTP API; an operator's
// cancel ends a wait as Canceled and its caller gets a structured cancelled
// result naming the operator; a timed-out wait shows DurawaitState=timeout.
func TestOperatorsFindEveryWaitAndSeeHonestStates(t *testing.T) {
	w := newOperatorWorld(t)
	tc := temporalClient(t, w.engine)

	// A wait_for over the stateless protocol (the client names itself in
	// _meta), a wait_for_text, and an agent over a 2025-11-25 session.
	modern := w.inst.client(t)
	w.write("job", "Pending")
	waitForArgs := readFileWait(w.path("job"), nil)
	waitForDone := callInBackground(modern, "wait_for", waitForArgs)

	panes := listPanes(t, modern)
	require.NotEmpty(t, panes)
	pane := panes[0]
	textDone := callInBackground(modern, "wait_for_text", map[string]any{
		"target": map[string]any{"paneId": pane.PaneID, "generation": pane.Generation}, "text": "NEVER-PRINTED-42",
	})

	legacyTransport, err := client.NewStreamableHttpClient("http://" + w.inst.http + "/mcp")
	require.NoError(t, err)
	legacy := initializeAt(t, legacyTransport, mcp.ProtocolVersion20251125)
	session := legacyTransport.GetSessionId()
	require.NotEmpty(t, session, "a 2025-11-25 client has a session")
	require.NoError(t, os.WriteFile(w.path("scripts/hold.script"), []byte(strings.Join([]string{
		`{"type":"system","subtype":"init","session_id":"{session}"}`,
		`@wait go`,
		`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"{session}"}`,
	}, "\n")+"\n"), 0o644))
	agentID := legacy.startAgent(t, "fake", "hold", map[string]any{"cwd": w.path("work")})
	t.Cleanup(func() {
		// Its CLI holds until cancelled: it is not left running past the
		// test (durawait, stopped later, would leave it to its supervisor).
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_, _ = legacy.call(ctx, "cancel_agent", map[string]any{"invocation_id": agentID}, "")
	})

	var waitForID, textID string
	eventually(t, "the three waits to run", func() bool {
		waitForID, textID = "", ""
		if ids := found(t, tc, `DurawaitTool = "wait_for"`); len(ids) == 1 {
			waitForID = ids[0]
		}
		if ids := found(t, tc, `DurawaitTool = "wait_for_text"`); len(ids) == 1 {
			textID = ids[0]
		}
		return waitForID != "" && textID != ""
	})
	assert.True(t, strings.HasPrefix(waitForID, "wait_for/"))
	assert.True(t, strings.HasPrefix(textID, "wait_for_text/"))

	t.Run("each search attribute finds the running waits", func(t *testing.T) {
		for _, tc2 := range []struct {
			query string
			want  []string
		}{
			{`DurawaitTool = "wait_for" AND DurawaitState = "running"`, []string{waitForID}},
			{`DurawaitTool = "wait_for" AND DurawaitState = "running" AND ExecutionStatus = "Running"`, []string{waitForID}}, // the saved view
			{`DurawaitProbeTool = "demo.read_file" AND DurawaitState = "running"`, []string{waitForID}},
			{`DurawaitTool = "wait_for_text" AND DurawaitState = "running"`, []string{textID}},
			{fmt.Sprintf(`DurawaitTarget STARTS_WITH %q`, "tmux pane "+pane.PaneID+" "), []string{textID}},             // a pane's waits
			{`DurawaitTarget STARTS_WITH "demo.read_file path=" AND ExecutionStatus = "Running"`, []string{waitForID}}, // by target
			{fmt.Sprintf(`DurawaitTarget = %q`, waitForTarget(t, w.path("job"))), []string{waitForID}},                 // one wait by its target
			{`DurawaitTarget STARTS_WITH "agent fake in "`, []string{agentID}},
			{`DurawaitTool = "start_agent" AND DurawaitState = "running"`, []string{agentID}},
			{`DurawaitAgentProvider = "fake" AND DurawaitAgentStatus = "running"`, []string{agentID}},
			{fmt.Sprintf(`DurawaitSession = %q`, session), []string{agentID}},
			{`DurawaitClient = "durawait-e2e/1" AND DurawaitTool = "start_agent"`, []string{agentID}},
			{`DurawaitClient = "durawait-e2e/1" AND DurawaitTool = "wait_for"`, []string{waitForID}},
			{`DurawaitCaller = "anonymous" AND DurawaitState = "running" AND DurawaitTool IN ("wait_for", "wait_for_text")`, nil},
		} {
			want := tc2.want
			if want == nil { // the last: both waits
				want = []string{textID, waitForID}
			}
			w.findEverywhere(t, tc, tc2.query, want...)
		}
	})

	t.Run("the list reads as sentences and the memo uses the tool's argument names", func(t *testing.T) {
		desc, err := tc.DescribeWorkflowExecution(context.Background(), waitForID, "")
		require.NoError(t, err)
		meta := desc.GetExecutionConfig().GetUserMetadata()
		var summary, details string
		require.NoError(t, sdkConverterFromPayload(meta.GetSummary(), &summary))
		require.NoError(t, sdkConverterFromPayload(meta.GetDetails(), &details))
		assert.True(t, strings.HasPrefix(summary, `wait_for read_file path=`), "the probe's arguments: %s", summary)
		assert.True(t, strings.HasSuffix(summary, `/job until matches "READY" (every 1 s, ≤60 s)`), summary)
		assert.Contains(t, details, `"matches": "READY"`)
		var until map[string]any
		require.NoError(t, sdkConverterFromPayload(desc.WorkflowExecutionInfo.GetMemo().GetFields()["until"], &until))
		assert.Equal(t, map[string]any{"matches": "READY"}, until)
	})

	t.Run("an operator's cancel is Canceled with a structured result naming the operator", func(t *testing.T) {
		operator, err := sdkclient.Dial(sdkclient.Options{HostPort: w.engine, Namespace: "default", Identity: "operator-alice@ops",
			ConnectionOptions: sdkclient.ConnectionOptions{TLS: engineTLS(t, w.engine)}})
		require.NoError(t, err)
		defer operator.Close()
		require.NoError(t, operator.CancelWorkflow(context.Background(), waitForID, ""))
		t0 := time.Now()
		res := <-waitForDone
		t.Logf("wait_for answered %s after the cancel", time.Since(t0))
		require.True(t, res.IsError, "a cancelled wait did not reach its condition")
		var got struct {
			Reason    string `json:"reason"`
			Cancelled struct {
				By string `json:"by"`
				At string `json:"at"`
			} `json:"cancelled"`
			EffectiveMaxWaitSec int `json:"effective_max_wait_sec"`
		}
		raw, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &got))
		assert.Equal(t, "failed", got.Reason, "wait_for's output schema's reasons")
		assert.Equal(t, "operator-alice@ops", got.Cancelled.By)
		assert.NotEmpty(t, got.Cancelled.At)
		assert.Equal(t, 60, got.EffectiveMaxWaitSec)
		assert.Contains(t, resultText(res), "cancelled by operator-alice@ops")
		assert.NotContains(t, resultText(res), "workflow execution error")

		desc, err := tc.DescribeWorkflowExecution(context.Background(), waitForID, "")
		require.NoError(t, err)
		assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, desc.WorkflowExecutionInfo.Status, "Canceled, not Completed")
		w.findEverywhere(t, tc, `DurawaitTool = "wait_for" AND DurawaitState = "cancelled"`, waitForID)

		require.NoError(t, operator.CancelWorkflow(context.Background(), textID, ""))
		t0 = time.Now()
		text := <-textDone
		t.Logf("wait_for_text answered %s after the cancel", time.Since(t0))
		require.True(t, text.IsError)
		var tr struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
			Cancelled struct {
				By string `json:"by"`
			} `json:"cancelled"`
		}
		raw, err = json.Marshal(text.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &tr))
		assert.Equal(t, "cancelled", tr.Error.Code)
		assert.Equal(t, "operator-alice@ops", tr.Cancelled.By)
		w.findEverywhere(t, tc, `DurawaitTool = "wait_for_text" AND DurawaitState = "cancelled"`, textID)
	})

	t.Run("a timed-out wait shows DurawaitState timeout", func(t *testing.T) {
		res := modern.waitFor(t, readFileWait(w.path("job"), map[string]any{"max_wait_sec": 2}))
		require.Equal(t, "timeout", res.Reason)
		ids := found(t, tc, `DurawaitTool = "wait_for" AND ExecutionStatus = "Completed"`)
		eventually(t, "the timed-out wait to be listed", func() bool {
			ids = found(t, tc, `DurawaitTool = "wait_for" AND ExecutionStatus = "Completed"`)
			return len(ids) == 1
		})
		w.findEverywhere(t, tc, `DurawaitState = "timeout"`, ids[0])
	})

	t.Run("an agent's end shows in its status", func(t *testing.T) {
		require.NoError(t, os.WriteFile(w.path("scripts/go"), nil, 0o644))
		p := legacy.waitUntilFinished(t, agentID)
		require.Equal(t, "succeeded", p.Status)
		w.findEverywhere(t, tc, `DurawaitAgentStatus = "succeeded" AND DurawaitState = "matched"`, agentID)
	})

	t.Run("an operator's cancel of an agent is Canceled and wait_agent names the operator", func(t *testing.T) {
		require.NoError(t, os.WriteFile(w.path("scripts/hold2.script"), []byte(strings.Join([]string{
			`{"type":"system","subtype":"init","session_id":"{session}"}`,
			`@wait never`,
		}, "\n")+"\n"), 0o644))
		id := legacy.startAgent(t, "fake", "hold2", map[string]any{"cwd": w.path("work")})
		w.findEverywhere(t, tc, fmt.Sprintf(`WorkflowId = %q AND DurawaitAgentStatus = "running"`, id), id)
		operator, err := sdkclient.Dial(sdkclient.Options{HostPort: w.engine, Namespace: "default", Identity: "operator-bob",
			ConnectionOptions: sdkclient.ConnectionOptions{TLS: engineTLS(t, w.engine)}})
		require.NoError(t, err)
		defer operator.Close()
		require.NoError(t, operator.CancelWorkflow(context.Background(), id, ""))
		var p payload
		eventually(t, "wait_agent to report the cancel", func() bool {
			p = legacy.waitAgent(t, id)
			return p.Reason == "finished"
		})
		assert.Equal(t, "cancelled", p.Status)
		require.NotNil(t, p.Error)
		assert.Equal(t, "cancelled", p.Error.Code)
		assert.Contains(t, p.Error.Message, "cancelled by operator-bob")
		desc, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
		require.NoError(t, err)
		assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, desc.WorkflowExecutionInfo.Status)
		w.findEverywhere(t, tc, `DurawaitAgentStatus = "cancelled" AND DurawaitState = "cancelled"`, id)
	})

	t.Run("retention is the configured one", func(t *testing.T) {
		desc, err := tc.WorkflowService().DescribeNamespace(context.Background(), &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
		require.NoError(t, err)
		assert.Equal(t, 48.0, desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration().Hours())
	})
}

// waitForTarget is the target of readFileWait(path) on the demo server.
func waitForTarget(t *testing.T, path string) string {
	t.Helper()
	args, err := json.Marshal(map[string]string{"path": path})
	require.NoError(t, err)
	return workflows.WaitForTarget(workflows.WaitForSpec{
		Probe: workflows.Probe{Tool: "demo.read_file", Args: args},
		Until: workflows.Until{Kind: workflows.ConditionMatches, Pattern: "READY"},
	}, false)
}
