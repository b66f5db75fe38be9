package engine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A database whose schema is gone (an empty file: what is left when the
// write-ahead log that held everything is lost or corrupt) or that is not
// a database at all is named with what to do, not "no such table".
func TestADamagedDatabaseIsNamedWithWhatToDo(t *testing.T) {
	for name, content := range map[string][]byte{
		"schema lost with the WAL": {},
		"garbage":                  []byte("this is not an SQLite database, whatever its name says...................................................."),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "temporal.db")
			require.NoError(t, os.WriteFile(file, content, 0o600))
			_, err := prepareDatabase(Options{DataDir: dir, Namespace: "default"})
			require.Error(t, err)
			var d *DamagedDatabaseError
			require.True(t, errors.As(err, &d), "%v", err)
			assert.Equal(t, file, d.File)
			assert.Contains(t, err.Error(), "the database "+file+" is damaged or incomplete")
			assert.Contains(t, err.Error(), file+"-wal may be corrupt")
			assert.Contains(t, err.Error(), "move "+file+", "+file+"-wal and "+file+"-shm aside")
		})
	}
}

func TestDamagedLeavesOtherErrorsAlone(t *testing.T) {
	err := errors.New("permission denied")
	assert.Same(t, err, damaged("x.db", err))
	assert.NoError(t, damaged("x.db", nil))
}
