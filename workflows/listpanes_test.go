package workflows

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

func listPanesStub(context.Context, ListPanesInput) (ListPanesOutput, error) { panic("mocked") }

func newListPanesEnv() *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(ListPanes, workflow.RegisterOptions{Name: ListPanesWorkflowName})
	env.RegisterActivityWithOptions(listPanesStub, activity.RegisterOptions{Name: ListPanesActivityName})
	return env
}

func TestListPanesRunsOnTheTmuxHostsQueue(t *testing.T) {
	env := newListPanesEnv()
	in := ListPanesInput{HostQueue: "durawait-tmux-hostb", Socket: "/tmp/s"}
	want := ListPanesOutput{Panes: []Pane{{PaneID: "%0", Generation: "g1:ab", Session: "main"}}}
	var queue string
	env.OnActivity(ListPanesActivityName, mock.Anything, in).
		Return(func(ctx context.Context, _ ListPanesInput) (ListPanesOutput, error) {
			queue = activity.GetInfo(ctx).TaskQueue
			return want, nil
		})
	env.ExecuteWorkflow(ListPanesWorkflowName, in)
	require.NoError(t, env.GetWorkflowError())
	var out ListPanesOutput
	require.NoError(t, env.GetWorkflowResult(&out))
	assert.Equal(t, want, out)
	assert.Equal(t, "durawait-tmux-hostb", queue)
}

// No worker on the tmux host is a tmux_unavailable answer, not a hang.
func TestListPanesWithNoTmuxWorkerIsTmuxUnavailable(t *testing.T) {
	env := newListPanesEnv()
	env.OnActivity(ListPanesActivityName, mock.Anything, mock.Anything).
		Return(ListPanesOutput{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil))
	env.ExecuteWorkflow(ListPanesWorkflowName, ListPanesInput{HostQueue: "durawait-tmux-gone"})
	require.NoError(t, env.GetWorkflowError())
	var out ListPanesOutput
	require.NoError(t, env.GetWorkflowResult(&out))
	require.NotNil(t, out.Error)
	assert.Equal(t, TextErrTmuxUnavailable, out.Error.Code)
	assert.True(t, out.Error.Retryable)
	assert.Contains(t, out.Error.Message, "durawait-tmux-gone")
	assert.Empty(t, out.Panes)
}
