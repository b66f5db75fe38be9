package engine

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/server/common/config"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

// freshDatabase is a database as the engine creates it, in dir.
func freshDatabase(t *testing.T, dir string) *config.SQL {
	t.Helper()
	conf := &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: DatabaseFile(dir),
		ConnectAttributes: map[string]string{"mode": "rwc", "journal_mode": "wal"}}
	require.NoError(t, sqliteschema.SetupSchema(conf))
	require.NoError(t, ensureSchema(conf, true, quiet()))
	return conf
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// exec runs statements on the database of conf.
func exec(t *testing.T, conf *config.SQL, stmts ...string) {
	t.Helper()
	admin, err := openAdmin(conf)
	require.NoError(t, err)
	defer admin.Close()
	for _, s := range stmts {
		require.NoError(t, admin.Exec(s), s)
	}
}

func schemaVersion(t *testing.T, conf *config.SQL) string {
	t.Helper()
	admin, err := openAdmin(conf)
	require.NoError(t, err)
	defer admin.Close()
	v, err := schemaDB{admin: admin}.ReadSchemaVersion()
	require.NoError(t, err)
	return v
}

// A database an older durawait created (schema 0.10: before the table
// v0.11 adds) is backed up, then updated to this server's schema at start.
func TestAnOlderDatabaseIsBackedUpThenUpdated(t *testing.T) {
	dir := t.TempDir()
	conf := freshDatabase(t, dir)
	assert.Equal(t, sqliteschema.Version, schemaVersion(t, conf), "a fresh database records its version")
	exec(t, conf, "DROP TABLE current_chasm_executions",
		"UPDATE schema_version SET curr_version = '0.10' WHERE db_name = 'temporal'")

	require.NoError(t, ensureSchema(conf, false, quiet()))
	assert.Equal(t, sqliteschema.Version, schemaVersion(t, conf))
	exec(t, conf, "SELECT count(*) FROM current_chasm_executions") // the update made it again
	backups, err := filepath.Glob(DatabaseFile(dir) + BackupSuffix + "*")
	require.NoError(t, err)
	require.Len(t, backups, 1, "the database before the update is kept beside it")
	old := &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: backups[0], ConnectAttributes: map[string]string{"mode": "ro"}}
	assert.Equal(t, "0.10", schemaVersion(t, old), "the backup is the database as it was")

	require.NoError(t, ensureSchema(conf, false, quiet()), "a current database is left alone")
	backups, _ = filepath.Glob(DatabaseFile(dir) + BackupSuffix + "*")
	assert.Len(t, backups, 1, "no second backup")
}

// A database a newer durawait wrote is refused, untouched; one created
// before the record is taken at this build's version.
func TestANewerDatabaseIsRefusedAndAnUnrecordedOneTakenAsCurrent(t *testing.T) {
	dir := t.TempDir()
	conf := freshDatabase(t, dir)
	exec(t, conf, "UPDATE schema_version SET curr_version = '9.0' WHERE db_name = 'temporal'")
	err := ensureSchema(conf, false, quiet())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a newer durawait wrote this data dir")
	assert.Equal(t, "9.0", schemaVersion(t, conf))

	exec(t, conf, "DROP TABLE schema_version", "DROP TABLE schema_update_history")
	require.NoError(t, ensureSchema(conf, false, quiet()))
	assert.Equal(t, sqliteschema.Version, schemaVersion(t, conf))

	exec(t, conf, "DELETE FROM schema_version")
	require.NoError(t, ensureSchema(conf, false, quiet()), "a table without its row (a kill between the two) is no record")
	assert.Equal(t, sqliteschema.Version, schemaVersion(t, conf))
}

// A backup of a database is a consistent copy, taken while it is open.
func TestBackupDatabaseCopiesTheDatabase(t *testing.T) {
	dir := t.TempDir()
	conf := freshDatabase(t, dir)
	to := filepath.Join(t.TempDir(), "copy.db")
	require.NoError(t, BackupDatabase(dir, to))
	info, err := os.Stat(to)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	copied := &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: to, ConnectAttributes: map[string]string{"mode": "ro"}}
	assert.Equal(t, schemaVersion(t, conf), schemaVersion(t, copied))
	require.Error(t, BackupDatabase(dir, to), "never over an existing file")
}
