package waits

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQueryUsesTheSearchAttributes(t *testing.T) {
	q, notes := Query(ListOptions{Running: true, Tool: "wait_for", Caller: "o'brien"})
	assert.Equal(t, `ExecutionStatus = 'Running' AND DurawaitTool = 'wait_for' AND DurawaitCaller = 'o\'brien'`, q)
	assert.Empty(t, notes)

	q, _ = Query(ListOptions{})
	assert.Equal(t, `WorkflowType IN ('WaitFor', 'WaitForText', 'AgentInvocation')`, q,
		"only the waits: not the catalog, nor a split front end's call/ and list_panes/ workflows")
}

func TestToolOfID(t *testing.T) {
	assert.Equal(t, "wait_for", toolOfID("wait_for/p0123/abc"))
	assert.Equal(t, "wait_for_text", toolOfID("wait_for_text/abc"))
	assert.Equal(t, "start_agent", toolOfID("agent/abc"))
	assert.Equal(t, "", toolOfID("something-else"))
}

func TestTableAndDetail(t *testing.T) {
	started := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	require.NoError(t, WriteTable(&b, []Wait{{ID: "wait_for/abc", Tool: "wait_for", State: "running", Started: started,
		Summary: "wait_for read_file until matches /READY/\n(every 1s)"}}))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, []string{"ID", "TOOL", "STATE", "CALLER", "STARTED", "SUMMARY"}, strings.Fields(lines[0]))
	assert.Contains(t, lines[1], "wait_for/abc")
	assert.Contains(t, lines[1], " - ", "no caller is a dash")
	assert.Contains(t, lines[1], "until matches /READY/ (every 1s)", "the summary on one line")

	b.Reset()
	closed := started.Add(3 * time.Second)
	require.NoError(t, WriteDetail(&b, Detail{
		Wait:      Wait{ID: "wait_for/abc", State: "canceled", Started: started, Closed: &closed},
		Arguments: map[string]any{"spec": map[string]any{"poll_sec": 1}},
		Changes: []Change{{Time: started, What: "started"},
			{Time: closed, What: "cancel requested", Identity: "durawait-waits:ops@host"}},
		Failure: "canceled",
	}))
	out := b.String()
	for _, want := range []string{"wait:     wait_for/abc", "closed:", "(after 3s)", `"poll_sec": 1`, "cancel requested (by durawait-waits:ops@host)", "result: canceled"} {
		assert.Contains(t, out, want)
	}
}

func TestOperatorIdentityNamesUserAndHost(t *testing.T) {
	id := OperatorIdentity()
	assert.True(t, strings.HasPrefix(id, "durawait-waits:"), id)
	assert.Contains(t, id, "@")
}

// --tool wait_agent finds the agent invocations (they carry start_agent);
// a tool that is none of durawait's own
// is queried but noted.
func TestQueryMapsWaitAgentAndNotesAnUnknownTool(t *testing.T) {
	q, notes := Query(ListOptions{Tool: "wait_agent"})
	assert.Equal(t, `DurawaitTool = 'start_agent'`, q)
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "start_agent")

	q, notes = Query(ListOptions{Tool: "wiat_for"})
	assert.Equal(t, `DurawaitTool = 'wiat_for'`, q)
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "--tool wiat_for is not one of durawait's own tools")
}

func TestCancelRefusesTheInternalWorkflows(t *testing.T) {
	for _, id := range []string{"durawait-catalog/durawait", "durawait-host/vm-13626d93"} {
		err := Cancel(context.Background(), nil, id)
		require.Error(t, err, id)
		assert.Contains(t, err.Error(), "internal workflow")
	}
}

// Control characters from callers (an ESC sequence in a summary or a
// caller) never reach the terminal.
func TestTableAndDetailStripControlCharacters(t *testing.T) {
	evil := "a\x1b[31mred\u009b2J\x07"
	var b bytes.Buffer
	require.NoError(t, WriteTable(&b, []Wait{{ID: "wait_for/" + evil, Tool: "wait_for", State: "running", Caller: evil, Summary: evil}}))
	require.NoError(t, WriteDetail(&b, Detail{Wait: Wait{ID: evil, Caller: evil, Summary: evil},
		Changes: []Change{{What: evil, Identity: evil}}, Failure: evil}))
	out := b.String()
	for _, c := range []string{"\x1b", "\u009b", "\x07"} {
		assert.NotContains(t, out, c)
	}
	assert.Contains(t, out, "a\uFFFD[31mred")
}
