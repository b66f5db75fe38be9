package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

func callStub(context.Context, DownstreamCall) (DownstreamCallResult, error) { panic("mocked") }

func newCallEnv() *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(CallDownstreamTool, workflow.RegisterOptions{Name: CallDownstreamToolWorkflowName})
	env.RegisterActivityWithOptions(callStub, activity.RegisterOptions{Name: CallDownstreamToolActivityName})
	return env
}

func TestCallDownstreamToolReturnsTheActivitysResult(t *testing.T) {
	env := newCallEnv()
	in := DownstreamCall{Server: "demo", Tool: "read_file", Arguments: json.RawMessage(`{"path":"/x"}`)}
	want := DownstreamCallResult{Result: json.RawMessage(`{"content":[{"type":"text","text":"hi"}]}`)}
	var got DownstreamCall
	env.OnActivity(CallDownstreamToolActivityName, mock.Anything, mock.Anything).
		Return(func(_ context.Context, in DownstreamCall) (DownstreamCallResult, error) {
			got = in
			return want, nil
		}).Once()
	env.ExecuteWorkflow(CallDownstreamToolWorkflowName, in)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out DownstreamCallResult
	require.NoError(t, env.GetWorkflowResult(&out))
	assert.Equal(t, want, out)
	assert.Equal(t, in, got)
}

// A tool call is not idempotent: a failed attempt is not retried.
func TestCallDownstreamToolIsNotRetried(t *testing.T) {
	env := newCallEnv()
	env.OnActivity(CallDownstreamToolActivityName, mock.Anything, mock.Anything).
		Return(DownstreamCallResult{}, errors.New("worker lost the call")).Once()
	env.ExecuteWorkflow(CallDownstreamToolWorkflowName, DownstreamCall{Server: "demo", Tool: "write"})
	require.True(t, env.IsWorkflowCompleted())
	require.ErrorContains(t, env.GetWorkflowError(), "worker lost the call")
	env.AssertExpectations(t) // Once: exactly one attempt
}
