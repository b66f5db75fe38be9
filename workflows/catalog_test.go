package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

func newCatalogEnv() *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Catalog, workflow.RegisterOptions{Name: CatalogWorkflowName})
	env.RegisterWorkflowWithOptions(Catalog, workflow.RegisterOptions{Name: LegacyCatalogWorkflowName})
	return env
}

func catalogNamed(name string, tmuxQueue string) DownstreamCatalog {
	return DownstreamCatalog{
		Servers:       []DownstreamServer{{Name: name, Expose: true, Tools: []json.RawMessage{json.RawMessage(`{"name":"t"}`)}}},
		TmuxHostQueue: tmuxQueue,
	}
}

func queryCatalog(t *testing.T, env *testsuite.TestWorkflowEnvironment) DownstreamCatalog {
	t.Helper()
	v, err := env.QueryWorkflow(CatalogQueryName)
	require.NoError(t, err)
	var got DownstreamCatalog
	require.NoError(t, v.Get(&got))
	return got
}

// The query answers the latest catalog signalled, whole: a catalog with no
// tmux queue replaces one that had one.
func TestCatalogAnswersTheLatestSignal(t *testing.T) {
	env := newCatalogEnv()
	env.RegisterDelayedCallback(func() {
		assert.Equal(t, DownstreamCatalog{}, queryCatalog(t, env), "nothing published yet")
		env.SignalWorkflow(CatalogSignalName, catalogNamed("a", "durawait-tmux-hosta"))
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		assert.Equal(t, catalogNamed("a", "durawait-tmux-hosta"), queryCatalog(t, env))
		env.SignalWorkflow(CatalogSignalName, catalogNamed("b", ""))
	}, 2*time.Second)
	env.RegisterDelayedCallback(func() {
		assert.Equal(t, catalogNamed("b", ""), queryCatalog(t, env))
		env.CancelWorkflow()
	}, 3*time.Second)
	env.ExecuteWorkflow(CatalogWorkflowName, DownstreamCatalog{})
	require.True(t, env.IsWorkflowCompleted())
	err := env.GetWorkflowError()
	require.Error(t, err)
	var cancelled *temporal.CanceledError
	assert.True(t, errors.As(err, &cancelled), "an operator's cancel ends the workflow as cancelled: %v", err)
}

// After catalogSignalsPerRun signals, the workflow continues as new with
// the latest catalog, so its history stays short and nothing is lost. A
// run of an earlier release's type continues under the internal type.
func TestCatalogContinuesAsNewWithTheLatest(t *testing.T) {
	for _, name := range []string{CatalogWorkflowName, LegacyCatalogWorkflowName} {
		t.Run(name, func(t *testing.T) {
			env := newCatalogEnv()
			for i := 1; i <= catalogSignalsPerRun; i++ {
				env.RegisterDelayedCallback(func() {
					env.SignalWorkflow(CatalogSignalName, catalogNamed(fmt.Sprint("s", i), ""))
				}, time.Duration(i)*time.Second)
			}
			env.ExecuteWorkflow(name, DownstreamCatalog{})
			require.True(t, env.IsWorkflowCompleted())
			var cont *workflow.ContinueAsNewError
			require.True(t, errors.As(env.GetWorkflowError(), &cont), "%v", env.GetWorkflowError())
			assert.Equal(t, InternalTypePrefix+"DownstreamCatalog", cont.WorkflowType.Name)
			var next DownstreamCatalog
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(cont.Input, &next))
			assert.Equal(t, catalogNamed(fmt.Sprint("s", catalogSignalsPerRun), ""), next)
		})
	}
}
