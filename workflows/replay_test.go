package workflows

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Every history in testdata/replay (recorded on a real engine by
// TestRecordReplayHistories, by this release and by earlier ones) replays
// on the current workflow code: a change to a workflow's commands that is
// not guarded by workflow.GetVersion fails here with a nondeterminism error.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "replay", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(WaitFor, workflow.RegisterOptions{Name: WaitForWorkflowName})
	r.RegisterWorkflowWithOptions(WaitForText, workflow.RegisterOptions{Name: WaitForTextWorkflowName})
	r.RegisterWorkflowWithOptions(AgentInvocation, workflow.RegisterOptions{Name: AgentWorkflowName})
	r.RegisterWorkflowWithOptions(CallDownstreamTool, workflow.RegisterOptions{Name: CallDownstreamToolWorkflowName})
	r.RegisterWorkflowWithOptions(ListPanes, workflow.RegisterOptions{Name: ListPanesWorkflowName})
	r.RegisterWorkflowWithOptions(Catalog, workflow.RegisterOptions{Name: CatalogWorkflowName})
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}
