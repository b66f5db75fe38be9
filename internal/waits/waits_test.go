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
	assert.Equal(t, `WorkflowType IN ('WaitFor', 'WaitForText', 'AgentInvocation', 'WaitForEvent', 'EventLatch')`, q,
		"only the waits and the events' latches: not the catalog, nor a split front end's call/ and list_panes/ workflows")
}

// --state and --since narrow the query on the state attribute and the
// start time; durations read as a person writes them.
func TestQueryByStateAndStartAndHumanDurations(t *testing.T) {
	since := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	q, _ := Query(ListOptions{Tool: "wait_for", State: "timeout", Since: since})
	assert.Equal(t, `DurawaitTool = 'wait_for' AND DurawaitState = 'timeout' AND StartTime >= '2026-12-06T09:00:00Z'`, q)
	assert.Contains(t, States(), "cancelled")
	for d, want := range map[time.Duration]string{
		850 * time.Millisecond: "850ms", 42 * time.Second: "42s", 3*time.Minute + 5*time.Second: "3m05s",
		2*time.Hour + 3*time.Minute: "2h03m", 76 * time.Hour: "3d04h",
	} {
		assert.Equal(t, want, Human(d))
	}
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
	ended := started.Add(3*time.Minute + 5*time.Second)
	require.NoError(t, WriteTable(&b, []Wait{
		{ID: "wait_for/abc", RunID: "01a24b6b-b847-707c-905e-d2774b15c39a", Tool: "wait_for", State: "running", Started: started,
			Summary: "wait_for read_file until matches /READY/\n(every 1s)"},
		{ID: "wait_for/abc", RunID: "01a24b6b-c000-7000-8000-00000a1b2c3d", Tool: "wait_for", State: "timeout", Started: started, Closed: &ended,
			Target: "demo.read_file path=build/status matches ^SUCCESS", Summary: "not shown: the target is"},
	}, started.Add(42*time.Second)))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, []string{"ID", "RUN", "TOOL", "STATE", "CALLER", "STARTED", "DURATION", "TARGET"}, strings.Fields(lines[0]))
	assert.True(t, strings.HasSuffix(lines[2], "demo.read_file path=build/status matches ^SUCCESS"), "what the wait waits for: %s", lines[2])
	assert.Contains(t, lines[1], "wait_for/abc")
	assert.Contains(t, lines[1], "4b15c39a ", "the run (its random end) tells an identical call's runs apart")
	assert.Contains(t, lines[1], "running 42s")
	assert.Contains(t, lines[2], "0a1b2c3d ", "runs started in the same minute differ")
	assert.Contains(t, lines[2], " 3m05s ")
	assert.Contains(t, lines[1], " - ", "no caller is a dash")
	assert.Contains(t, lines[1], "until matches /READY/ (every 1s)", "with no target (a wait from before targets), the summary on one line")

	b.Reset()
	closed := started.Add(3 * time.Second)
	require.NoError(t, WriteDetail(&b, Detail{
		Wait:      Wait{ID: "wait_for/abc", State: "canceled", Started: started, Closed: &closed},
		Arguments: map[string]any{"spec": map[string]any{"poll_sec": 1, "args": map[string]any{"window": 60}}, "max_run": float64(6 * time.Hour)},
		Changes: []Change{{Time: started, What: "started"},
			{Time: closed, What: "cancel requested", Identity: "durawait-waits:ops@host"}},
		Failure: "canceled",
	}))
	out := b.String()
	for _, want := range []string{"wait:     wait_for/abc", "closed:", "(after 3s)", `"poll_sec": 1`, `"max_run": "6h00m"`, "cancel requested (by durawait-waits:ops@host)", "result: canceled", `"window": 60`} {
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
		err := Cancel(context.Background(), nil, "default", id, "")
		require.Error(t, err, id)
		assert.Contains(t, err.Error(), "internal workflow")
	}
}

// Control characters from callers (an ESC sequence in a summary or a
// caller) never reach the terminal.
func TestTableAndDetailStripControlCharacters(t *testing.T) {
	evil := "a\x1b[31mred\u009b2J\x07"
	var b bytes.Buffer
	require.NoError(t, WriteTable(&b, []Wait{{ID: "wait_for/" + evil, Tool: "wait_for", State: "running", Caller: evil, Summary: evil}}, time.Now()))
	require.NoError(t, WriteDetail(&b, Detail{Wait: Wait{ID: evil, Caller: evil, Summary: evil},
		Changes: []Change{{What: evil, Identity: evil}}, Failure: evil}))
	out := b.String()
	for _, c := range []string{"\x1b", "\u009b", "\x07"} {
		assert.NotContains(t, out, c)
	}
	assert.Contains(t, out, "a\uFFFD[31mred")
}
