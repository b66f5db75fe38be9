package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/durawait/durawait/workflows"
)

// jsonLines is a log destination whose lines a test reads back as JSON.
type jsonLines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (j *jsonLines) Write(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.buf.Write(p)
}

// ended returns the "wait ended" lines written so far.
func (j *jsonLines) ended(t *testing.T) []map[string]any {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(j.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if m["msg"] == "wait ended" {
			out = append(out, m)
		}
	}
	return out
}

// replay replays the recorded history file (workflows/testdata/replay)
// with WaitEndLogger on a replayer whose workflow logger writes to lines;
// loggingInReplay makes the replay-aware logger write as if the run were
// live.
func replay(t *testing.T, file string, loggingInReplay bool) *jsonLines {
	t.Helper()
	r, err := sdkworker.NewWorkflowReplayerWithOptions(sdkworker.WorkflowReplayerOptions{
		Interceptors:          []interceptor.WorkerInterceptor{&WaitEndLogger{}},
		EnableLoggingInReplay: loggingInReplay,
	})
	require.NoError(t, err)
	r.RegisterWorkflowWithOptions(workflows.WaitFor, workflow.RegisterOptions{Name: workflows.WaitForWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.WaitForText, workflow.RegisterOptions{Name: workflows.WaitForTextWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.AgentInvocation, workflow.RegisterOptions{Name: workflows.AgentWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.CallDownstreamTool, workflow.RegisterOptions{Name: workflows.CallDownstreamToolWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.ListPanes, workflow.RegisterOptions{Name: workflows.ListPanesWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.Catalog, workflow.RegisterOptions{Name: workflows.CatalogWorkflowName})
	lines := &jsonLines{}
	logger := sdklog.NewStructuredLogger(slog.New(slog.NewJSONHandler(lines, nil)))
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(logger, filepath.Join("..", "workflows", "testdata", "replay", file)))
	return lines
}

// Each recorded wait history replays with the interceptor (it adds no
// command, so no nondeterminism) and, logged as if live, ends with one
// "wait ended" line naming the tool, the wait, the caller, the outcome
// (the wait's DurawaitState, or cancelled) and the duration. Replayed as
// a replay, it logs nothing: the line is written once per wait.
func TestWaitEndLoggerLogsEachWaitsEndOnce(t *testing.T) {
	// TestRecordReplayHistories (internal/e2e) recorded them through the
	// real tools, so each run names its tool and caller.
	cases := map[string]struct{ tool, outcome string }{
		"v7_waitfor_matched.json":          {"wait_for", "matched"},
		"v7_waitfor_timeout.json":          {"wait_for", "timeout"},
		"v7_waitfor_cancelled.json":        {"wait_for", "cancelled"},
		"v7_waitfortext_matched.json":      {"wait_for_text", "matched"},
		"v7_agent_succeeded.json":          {"start_agent", "matched"},
		"v7_agent_operator_cancelled.json": {"start_agent", "cancelled"},
		"v7_call.json":                     {},
		"v7_list_panes.json":               {},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) {
			assert.Empty(t, replay(t, file, false).ended(t), "a replay logs no end")
			lines := replay(t, file, true).ended(t)
			if want.tool == "" {
				assert.Empty(t, lines, "not a wait workflow")
				return
			}
			require.Len(t, lines, 1)
			l := lines[0]
			assert.Equal(t, "INFO", l["level"])
			assert.Equal(t, want.tool, l["tool"])
			assert.NotEmpty(t, l["wait_id"])
			require.IsType(t, map[string]any{}, l["caller"], "caller is a group, as on the front's lines")
			assert.Contains(t, l["caller"], "principal")
			assert.Equal(t, want.outcome, l["outcome"])
			assert.GreaterOrEqual(t, l["duration_ms"], float64(0))
		})
	}
}

// A live run's line carries its caller from the search attributes, and a
// run that fails ends as "error" with the error; its duration is the
// workflow clock's, from the run's start.
func TestWaitEndLoggerNamesTheCallerAndAnError(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	lines := &jsonLines{}
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewJSONHandler(lines, nil))))
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(sdkworker.Options{Interceptors: []interceptor.WorkerInterceptor{&WaitEndLogger{}}})
	require.NoError(t, env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(
		workflows.KeyTool.ValueSet("wait_for"), workflows.KeyCaller.ValueSet("alice"), workflows.KeyClient.ValueSet("claude/1"))))
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context) error {
		if err := workflow.UpsertTypedSearchAttributes(ctx, workflows.KeyState.ValueSet(string(workflows.StateRunning))); err != nil {
			return err
		}
		if err := workflow.Sleep(ctx, 90*time.Second); err != nil {
			return err
		}
		return errors.New("probe failed")
	}, workflow.RegisterOptions{Name: workflows.WaitForWorkflowName})
	env.ExecuteWorkflow(workflows.WaitForWorkflowName)
	require.Error(t, env.GetWorkflowError())

	ended := lines.ended(t)
	require.Len(t, ended, 1)
	l := ended[0]
	assert.Equal(t, "wait_for", l["tool"])
	assert.Equal(t, map[string]any{"principal": "alice", "client": "claude/1", "session": ""}, l["caller"],
		"a nested caller object, the shape of the front's lines")
	assert.Equal(t, "error", l["outcome"])
	assert.Contains(t, l["error"], "probe failed")
	assert.Equal(t, float64(90000), l["duration_ms"])
}

// A run's end is logged once per process, even when its last workflow
// task runs twice (the engine refused a completion that raced a new event);
// the memory of logged runs is bounded.
func TestWaitEndLoggerRemembersTheRunsItLogged(t *testing.T) {
	var l WaitEndLogger
	assert.True(t, l.first("r1"))
	assert.False(t, l.first("r1"), "the task that ran again logs nothing")
	for i := range endMemory {
		l.first(fmt.Sprintf("other-%d", i))
	}
	assert.Len(t, l.order, endMemory)
	assert.True(t, l.first("r1"), "forgotten past endMemory runs")
}
