package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tasks/list as docs/clients.md says it: the caller's wait_for and
// wait_for_text runs, newest first, 50 a page, the rest behind nextCursor,
// each task once. The tasks are made one after another, each ended before
// the next begins, so newest first is one order whether the engine sorts
// by start or by close.
func TestTasksListIsNewestFirstFiftyAPage(t *testing.T) {
	const tasks, page = 52, 50 // the documented page: one full, one of 2
	w := newWorkspace(t)
	inst := w.startServe(w.withTokens(w.writeConfig(w.demoServer("demo"))))
	alice, bob := inst.rawAs(t, aliceToken), inst.rawAs(t, bobToken)

	var made []string // task IDs, oldest first
	for i := range tasks {
		file := fmt.Sprintf("task-%02d", i)
		w.write(file, "READY")
		res, msg := alice.rpc("tools/call", map[string]any{"name": "wait_for", "arguments": readFileWait(w.path(file), nil), "task": map[string]any{}})
		require.Empty(t, msg, "task %d", i)
		var created struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		}
		require.NoError(t, json.Unmarshal(res, &created))
		require.NotEmpty(t, created.Task.TaskID)
		_, msg = alice.rpc("tasks/result", map[string]any{"taskId": created.Task.TaskID})
		require.Empty(t, msg, "the result of task %d", i)
		made = append(made, created.Task.TaskID)
	}

	type listed struct {
		Tasks []struct {
			TaskID    string `json:"taskId"`
			Status    string `json:"status"`
			CreatedAt string `json:"createdAt"`
		} `json:"tasks"`
		NextCursor string `json:"nextCursor"`
	}
	list := func(s *rawSession, cursor string) listed {
		t.Helper()
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, msg := s.rpc("tasks/list", params)
		require.Empty(t, msg)
		var l listed
		require.NoError(t, json.Unmarshal(res, &l), string(res))
		return l
	}

	first := list(alice, "")
	require.Len(t, first.Tasks, page, "a full first page")
	require.NotEmpty(t, first.NextCursor, "more behind the cursor")
	second := list(alice, first.NextCursor)
	require.Len(t, second.Tasks, tasks-page)
	assert.Empty(t, second.NextCursor, "the last page")

	var got []string
	var last time.Time
	for i, task := range append(first.Tasks, second.Tasks...) {
		got = append(got, task.TaskID)
		assert.Equal(t, "completed", task.Status, task.TaskID)
		created, err := time.Parse(time.RFC3339Nano, task.CreatedAt)
		require.NoError(t, err, task.CreatedAt)
		if i > 0 {
			assert.False(t, created.After(last), "task %d (%s) is newer than the one listed before it", i, task.TaskID)
		}
		last = created
	}
	want := make([]string, len(made))
	for i, id := range made {
		want[len(made)-1-i] = id
	}
	assert.Equal(t, want, got, "every task once, newest first")

	assert.Empty(t, list(bob, "").Tasks, "another principal's tasks are not listed")
	_, msg := alice.rpc("tasks/list", map[string]any{"cursor": "not a cursor!"})
	assert.Contains(t, msg, "cursor", "a cursor tasks/list did not return is refused, naming the field")
}
