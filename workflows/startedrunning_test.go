package workflows

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
)

// A front of this release starts a wait with DurawaitState: running; a
// worker of the previous release (a rolling upgrade of split roles, fronts
// first) runs its first task and upserts running all the same. A worker of
// this release that picks the wait up later must replay that history:
// whether the first upsert is skipped is decided by the version the first
// task recorded, not by the start attributes alone.
func TestAWaitStartedRunningOnAPreviousReleaseWorkerReplays(t *testing.T) {
	for _, file := range []string{"v4_waitfor_matched.json", "v3_waitfortext_matched.json"} {
		t.Run(file, func(t *testing.T) {
			hist, err := client.HistoryFromJSON(openFile(t, filepath.Join("testdata", "replay", file)), client.HistoryJSONOptions{})
			require.NoError(t, err)
			running, err := converter.GetDefaultDataConverter().ToPayload(string(StateRunning))
			require.NoError(t, err)
			running.Metadata["type"] = []byte("Keyword")
			started := hist.Events[0].GetWorkflowExecutionStartedEventAttributes()
			started.GetSearchAttributes().IndexedFields[KeyState.GetName()] = running
			r := worker.NewWorkflowReplayer()
			RegisterWorkflows(r)
			require.NoError(t, r.ReplayWorkflowHistory(nil, hist))
		})
	}
}
