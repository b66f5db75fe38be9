package workflows

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// replayScenarios are the recorded histories CI must replay: each workflow
// type in the ways it ends, and a crash or lost CLI recovered. A file
// testdata/replay/vN_<scenario>.json holds one (vN_ names the release that
// recorded it). v7 (liveness per host, issue 22) changed every wait
// workflow's commands; the histories of earlier releases were removed with
// it (docs/operations.md, "Upgrading"). v8 (the engine boundary, issue 23)
// changed the agent's cancel: its histories carry the version marker
// cancel-checks-principal (since folded: the replayer skips a version
// marker the code no longer asks for), and one a cancel the invocation
// ignored.
var replayScenarios = []string{
	"waitfor_matched", "waitfor_timeout", "waitfor_recovered", "waitfor_cancelled",
	"agent_succeeded", "agent_blocked", "agent_cancelled", "agent_resumed", "agent_operator_cancelled",
	"agent_timeout", "agent_unclaimed", "agent_cancel_ignored", "agent_answered", "agent_answered_after_exit",
	"waitfortext_matched", "call", "list_panes", "catalog", "hostlease",
	"event_latch", "eventwait_posted", "eventwait_timeout", "waitfor_woken",
}

// replayFile is the name of a recorded history: release prefix, scenario.
var replayFile = regexp.MustCompile(`^(v[0-9]+_)?([a-z_]+)\.json$`)

// Every history in testdata/replay replays on the current workflow code: a
// change to a workflow's commands that is not guarded by workflow.GetVersion
// fails here with a nondeterminism error. The histories are recorded on a
// real engine, by this release and by earlier ones still supported: see
// TestRecordReplayHistories in internal/e2e (the real binary; run it with
// DURAWAIT_RECORD_REPLAY=<release prefix>). Every file is replayed, every
// workflow type a worker registers has a history, and so does every
// scenario of replayScenarios.
func TestReplayRecordedHistories(t *testing.T) {
	dir := filepath.Join("testdata", "replay")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	r := worker.NewWorkflowReplayer()
	RegisterWorkflows(r)
	registered := map[string]bool{}
	for _, d := range Definitions() {
		registered[d.Name] = true
	}

	typesSeen := map[string]int{}
	scenariosSeen := map[string]int{}
	for _, e := range entries {
		name := e.Name()
		m := replayFile.FindStringSubmatch(name)
		if !assert.NotNil(t, m, "%s: every file in %s is a history named [vN_]<scenario>.json", name, dir) {
			continue
		}
		scenariosSeen[m[2]]++
		t.Run(name, func(t *testing.T) {
			hist, err := client.HistoryFromJSON(openFile(t, filepath.Join(dir, name)), client.HistoryJSONOptions{})
			require.NoError(t, err)
			require.NotEmpty(t, hist.Events)
			wfType := hist.Events[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()
			require.True(t, registered[wfType], "workflow type %q is registered by no worker", wfType)
			typesSeen[wfType]++
			var opts worker.ReplayWorkflowHistoryOptions
			if wfType == AgentWorkflowName {
				// An invocation checks its ID against a cancel's principal:
				// each replays as a local user's invocation, which the
				// recorded ones were.
				opts.OriginalExecution = workflow.Execution{ID: InvocationID("", [16]byte{}), RunID: "r1"}
			}
			require.NoError(t, r.ReplayWorkflowHistoryWithOptions(nil, hist, opts))
		})
	}
	for _, d := range Definitions() {
		assert.NotZero(t, typesSeen[d.Name], "no recorded history of workflow type %s", d.Name)
	}
	for _, s := range replayScenarios {
		assert.NotZero(t, scenariosSeen[s], "no recorded history of scenario %s", s)
	}
}

// openFile opens path for the test's duration.
func openFile(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}
