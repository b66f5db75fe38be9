package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An operator backs up a running durawait's data dir (`durawait backup`)
// while a wait is open, then loses the data dir with the process (kill
// -9, the disk gone) and restores the backup in its place: the wait,
// started before the backup, runs on after the restore and answers the
// flip its caller's call, made again, waits for. Its elapsed time counts
// from its first call, before the backup: it is the same wait, not a new
// one.
func TestABackupOfARunningDataDirRestoresItsOpenWait(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	inst := w.startServe(config)
	w.write("job", "pending")
	args := readFileWait(w.path("job"), map[string]any{"max_wait_sec": 120})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _, _ = inst.client(t).call(ctx, "wait_for", args, "") }()
	eventually(t, "the wait's probe to sample", func() bool { return w.calls(w.path("job")) > 0 })
	beforeBackup := time.Now()

	backup := w.path("backup")
	out, err := exec.Command(bin.durawait, "backup", "--config", config, "--to", backup).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "backed up")
	assert.FileExists(t, filepath.Join(backup, "temporal.db"))
	assert.NoFileExists(t, filepath.Join(backup, "durawait.lock"), "not the running process's lock")
	again, err := exec.Command(bin.durawait, "backup", "--config", config, "--to", backup).CombinedOutput()
	require.Error(t, err, "never over an existing folder")
	assert.Contains(t, string(again), "already exists")

	inst.kill9()
	cancel()
	require.NoError(t, os.RemoveAll(w.path("data")))
	require.NoError(t, os.Rename(backup, w.path("data")))
	restored := w.startServe(config)
	w.write("job", "READY after the restore")
	got := restored.client(t).waitFor(t, args)
	assert.Equal(t, "matched", got.Reason)
	assert.Equal(t, "READY after the restore", got.LastObservation)
	assert.GreaterOrEqual(t, got.ElapsedSec, time.Since(beforeBackup).Seconds()-1,
		"the wait from before the backup, not a new one")
}
