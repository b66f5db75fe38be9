package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A 2025-11-25 session that set a log level with logging/setLevel gets a
// notifications/message on its call's stream when its wait starts (one,
// not one per sample); at a level above info it gets none.
func TestASessionsLogLevelBringsItsWaitsStart(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	s := inst.rawAs(t, "")
	call := func(file string) string {
		t.Helper()
		w.write(file, "pending")
		args, err := json.Marshal(readFileWait(w.path(file), map[string]any{"max_wait_sec": 3}))
		require.NoError(t, err)
		s.nextID++
		status, body, _ := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"wait_for","arguments":%s}}`, s.nextID, args))
		require.Equal(t, http.StatusOK, status)
		require.Contains(t, string(body), `\"reason\":\"timeout\"`, "the wait ran to its bound")
		return string(body)
	}

	result, msg := s.rpc("logging/setLevel", map[string]any{"level": "info"})
	require.Empty(t, msg)
	assert.JSONEq(t, `{}`, string(result))
	body := call("job")
	assert.Equal(t, 1, strings.Count(body, `"method":"notifications/message"`), body)
	assert.Contains(t, body, `"level":"info","logger":"durawait"`)
	assert.Contains(t, body, `"message":"wait started"`)
	assert.Contains(t, body, `"wait_id":"wait_for/`)

	_, msg = s.rpc("logging/setLevel", map[string]any{"level": "error"})
	require.Empty(t, msg)
	body = call("other")
	assert.NotContains(t, body, "notifications/message", "nothing at error or above happened")
}

// A probe whose server is down is told to a session that asked for
// warnings once per distinct error while its wait samples every second,
// not once per sample; the wait carries on to its bound.
func TestAnUnreachableProbeIsToldOncePerDistinctError(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	s := inst.rawAs(t, "")
	_, msg := s.rpc("logging/setLevel", map[string]any{"level": "warning"})
	require.Empty(t, msg)

	w.write("svc", "down for maintenance")
	w.write("down", "")
	require.NoError(t, syscall.Kill(childPID(t, inst.cmd.Process.Pid, "demoprobe"), syscall.SIGKILL))
	args, err := json.Marshal(readFileWait(w.path("svc"), map[string]any{"max_wait_sec": 8, "poll_sec": 1}))
	require.NoError(t, err)
	s.nextID++
	status, raw, _ := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"wait_for","arguments":%s}}`, s.nextID, args))
	require.Equal(t, http.StatusOK, status)
	body := string(raw)
	require.Contains(t, body, `\"reason\":\"timeout\"`, "the wait ran to its bound: eight samples or so, none taken")
	warnings := strings.Count(body, "the probe cannot be reached")
	assert.GreaterOrEqual(t, warnings, 1, body)
	assert.LessOrEqual(t, warnings, 3, "one per distinct error, not one per sample: %s", body)
	assert.Contains(t, body, `"level":"warning"`)
	assert.NotContains(t, body, `"message":"wait started"`, "info is below the session's level")
}
