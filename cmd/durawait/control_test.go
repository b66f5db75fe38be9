package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/internal/datadir"
)

// hold takes dir as a durawait would (its lock and owner record, noted in
// the registry), for the test's duration.
func hold(t *testing.T, dir string, owner datadir.Owner) {
	t.Helper()
	lock, err := datadir.Acquire(dir, owner)
	require.NoError(t, err)
	t.Cleanup(lock.Release)
}

// status without flags lists every durawait the user runs, whatever data
// dir each holds, with the flag that reaches each (its config when it was
// started with one); with a flag it shows that one, and names the others
// when that one does not run. stop of a data dir nobody holds stops
// nothing and names the others, failing; with none running it succeeds.
func TestStatusFindsEveryDurawaitAndStopSaysWhichToStop(t *testing.T) {
	reg := t.TempDir()
	t.Setenv(datadir.RegistryEnv, reg)
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // the default data dir: nobody runs there

	code, out, _ := runCLI(t, "status")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "no durawait runs (for this user; the default data dir is ")

	projects := t.TempDir()
	config := filepath.Join(projects, "durawait.toml")
	withConfig := filepath.Join(projects, "state")
	require.NoError(t, os.WriteFile(config, []byte("data_dir = \"state\"\n"), 0o600))
	hold(t, withConfig, datadir.Owner{PID: os.Getpid(), Config: config, Args: []string{"serve", "--stdio", "--config", config},
		Log: datadir.LogPath(withConfig), StartedAt: time.Now().Add(-time.Minute)})
	plain := filepath.Join(t.TempDir(), "data")
	hold(t, plain, datadir.Owner{PID: os.Getpid(), Args: []string{"serve", "--data-dir", plain}, StartedAt: time.Now()})

	code, out, errOut := runCLI(t, "status")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 2, strings.Count(out, "pid:       "), out)
	assert.Contains(t, out, "config:    "+config+"\n")
	assert.Contains(t, out, "command:   durawait serve --stdio --config "+config+"\n")
	assert.Contains(t, out, "(background daemon, starting)")
	assert.Contains(t, out, "reach it:  durawait status --config '"+config+"'  (stop: durawait stop --config '"+config+"')")
	assert.Contains(t, out, "reach it:  durawait status --data-dir '"+plain+"'")
	assert.Less(t, strings.Index(out, withConfig), strings.Index(out, plain), "oldest first")

	code, out, _ = runCLI(t, "status", "--config", config)
	assert.Equal(t, 0, code)
	assert.Equal(t, 1, strings.Count(out, "pid:       "), "the one the flag names: %s", out)
	assert.Contains(t, out, "data dir:  "+withConfig+"\n")

	nobody := t.TempDir()
	code, out, _ = runCLI(t, "status", "--data-dir", nobody)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "no durawait runs on data dir "+nobody+"\nthese durawaits run on other data dirs:\n")
	assert.Contains(t, out, "data dir "+withConfig+": durawait status --config '"+config+"'\n")

	code, out, errOut = runCLI(t, "stop", "--data-dir", nobody)
	assert.Equal(t, 1, code, "nothing stopped while others run: %s", out)
	assert.Contains(t, out, "data dir "+plain+": durawait stop --data-dir '"+plain+"'\n")
	assert.Contains(t, errOut, "nothing stopped: no durawait runs on data dir "+nobody)
}
