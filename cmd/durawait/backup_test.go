package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/internal/config"
)

// A backup never goes into the data dir it copies (it would copy itself),
// and a data dir with no engine database is named as such.
func TestABackupRefusesAFolderInsideTheDataDir(t *testing.T) {
	data := t.TempDir()
	cfg := config.Config{DataDir: data}
	err := runBackup(cfg, filepath.Join(data, "backups", "b1"), io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "has no engine database")

	require.NoError(t, os.WriteFile(filepath.Join(data, "temporal.db"), nil, 0o600))
	to := filepath.Join(data, "backups", "b1")
	err = runBackup(cfg, to, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is inside the data dir")
	assert.NoDirExists(t, filepath.Join(data, "backups"), "nothing made")
}
