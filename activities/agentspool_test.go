package activities

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/internal/agentproc"
)

// spoolRun makes a spool folder name of the invocation id; ended writes
// its exit status, else it gets a live supervisor (this test's process).
func spoolRun(t *testing.T, root, name, id string, ended bool) string {
	t.Helper()
	dir := filepath.Join(root, name)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, invocationFile), []byte(id), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, agentproc.StdoutFile), []byte("output\n"), 0o600))
	if ended {
		require.NoError(t, os.WriteFile(filepath.Join(dir, agentproc.ExitFile), []byte("0"), 0o600))
	} else {
		require.NoError(t, os.WriteFile(filepath.Join(dir, agentproc.SupervisorFile), []byte(strconv.Itoa(os.Getpid())), 0o600))
	}
	return dir
}

// An invocation's spool (every turn, and a run set aside) goes as a whole,
// and only once none of its CLIs runs; another invocation's stays.
func TestAnEndedInvocationsSpoolIsRemovedWhole(t *testing.T) {
	root := t.TempDir()
	r := &AgentRunner{SpoolDir: root}
	done, running := "agent/"+strings.Repeat("a", 32), "agent/"+strings.Repeat("b", 32)
	doneDirs := []string{
		spoolRun(t, root, spoolName(done), done, true),
		spoolRun(t, root, spoolName(done)+".turn-1", done, true),
		spoolRun(t, root, spoolName(done)+".lost.20261206T120000", done, true),
	}
	spoolRun(t, root, spoolName(running), running, true)
	runningTurn := spoolRun(t, root, spoolName(running)+".turn-1", running, false)

	assert.Equal(t, []string{done}, r.SpooledInvocations(), "an invocation with a CLI running is not offered")

	removed, err := r.RemoveSpool(running)
	require.NoError(t, err)
	assert.Zero(t, removed, "a spool with a CLI running stays whole")
	assert.DirExists(t, runningTurn)

	removed, err = r.RemoveSpool(done)
	require.NoError(t, err)
	assert.Equal(t, 3, removed)
	for _, dir := range doneDirs {
		assert.NoDirExists(t, dir)
	}
	assert.DirExists(t, filepath.Join(root, spoolName(running)), "another invocation's spool stays")
}
