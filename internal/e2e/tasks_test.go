package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// taskJSON is an MCP task as the TypeScript SDK printed it.
type taskJSON struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	CreatedAt     string `json:"createdAt"`
	TTL           *int64 `json:"ttl"`
}

// A task-augmented wait_for returns a task at once; the task outlives a
// kill -9 of durawait and is read, listed, finished and cancelled through a
// new connection, with the official TypeScript SDK's tasks client.
func TestDurableTasksSurviveKill9(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	first := w.startServe(config)

	var created struct {
		TaskSupport  map[string]string `json:"taskSupport"`
		Capabilities map[string]any    `json:"capabilities"`
		Task         taskJSON          `json:"task"`
	}
	nodeScript(t, &created, "tasks.mjs", "create", "http://"+first.http+"/mcp", w.dir)
	// The wait began before the call returned its task: whatever passes from
	// here to the crash is part of its elapsed time. (Counting from before
	// the script started would count Node's start-up too.)
	taskReturned := time.Now()
	assert.Equal(t, "optional", created.TaskSupport["wait_for"])
	assert.Equal(t, "", created.TaskSupport["read_file"], "a re-exposed tool does not run as a task")
	assert.Contains(t, created.Capabilities, "list")
	assert.Contains(t, created.Capabilities, "cancel")
	assert.Contains(t, created.Capabilities, "requests")
	task := created.Task
	require.True(t, strings.HasPrefix(task.TaskID, "wait_for/"), "the task ID is derived from the workflow ID: %s", task.TaskID)
	assert.Equal(t, "working", task.Status)
	require.NotNil(t, task.TTL)

	eventually(t, "samples before the crash", func() bool { return w.calls("job") >= 2 })
	first.kill9()
	crashed := time.Since(taskReturned)
	second := w.startServe(config)

	var finished struct {
		AfterRestart taskJSON `json:"afterRestart"`
		Listed       []string `json:"listed"`
		Result       struct {
			StructuredContent waitResult      `json:"structuredContent"`
			IsError           bool            `json:"isError"`
			Meta              json.RawMessage `json:"_meta"`
		} `json:"result"`
		Final        taskJSON   `json:"final"`
		Cancelled    taskJSON   `json:"cancelled"`
		CancelledGet taskJSON   `json:"cancelledGet"`
		CancelAgain  string     `json:"cancelAgain"`
		Stream       []string   `json:"stream"`
		StreamResult waitResult `json:"streamResult"`
		StreamError  string     `json:"streamError"`
		BadArgs      string     `json:"badArgs"`
		NotATask     string     `json:"notATask"`
		UnknownTask  string     `json:"unknownTask"`
	}
	nodeScript(t, &finished, "tasks.mjs", "finish", "http://"+second.http+"/mcp", w.dir, task.TaskID)

	assert.Equal(t, task.TaskID, finished.AfterRestart.TaskID)
	assert.Equal(t, "working", finished.AfterRestart.Status, "the task outlived the crash")
	assert.Equal(t, task.CreatedAt[:19], finished.AfterRestart.CreatedAt[:19], "created when the first process took the call")
	assert.Contains(t, finished.Listed, task.TaskID)

	assert.False(t, finished.Result.IsError)
	assert.Equal(t, "matched", finished.Result.StructuredContent.Reason)
	assert.GreaterOrEqual(t, finished.Result.StructuredContent.ElapsedSec, crashed.Seconds()-0.05, "the wait began before the crash")
	assert.Contains(t, string(finished.Result.Meta), task.TaskID, "the result names its task (related-task)")
	assert.Equal(t, "completed", finished.Final.Status)

	assert.Equal(t, "cancelled", finished.Cancelled.Status)
	assert.Equal(t, "cancelled", finished.CancelledGet.Status)
	assert.Contains(t, finished.CancelAgain, "already cancelled")

	assert.Equal(t, []string{"taskCreated", "result"}, dropStatus(finished.Stream), "stream: %v (%s)", finished.Stream, finished.StreamError)
	assert.Equal(t, "matched", finished.StreamResult.Reason)

	assert.Contains(t, finished.BadArgs, "until: must hold exactly one of matches, not_matches or quiet_for_sec")
	assert.Contains(t, finished.NotATask, `tool "read_file" does not run as a task`)
	assert.Contains(t, finished.UnknownTask, "no task wait_for/nope@nope")
}

// dropStatus removes the taskStatus polls from a callToolStream trace.
func dropStatus(trace []string) []string {
	var out []string
	for _, m := range trace {
		if m != "taskStatus" {
			out = append(out, m)
		}
	}
	return out
}

// oneTask is what `tasks.mjs one` saw: a task-augmented call run to its
// result.
type oneTask struct {
	Task   taskJSON `json:"task"`
	Result struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	} `json:"result"`
	Final taskJSON `json:"final"`
}

// runOneTask runs tool as a task through the official TypeScript SDK.
func runOneTask(t *testing.T, url, dir, tool string, args map[string]any) oneTask {
	t.Helper()
	b, err := json.Marshal(args)
	require.NoError(t, err)
	var out oneTask
	nodeScript(t, &out, "tasks.mjs", "one", url, dir, tool, string(b))
	return out
}
