package engine

import (
	stdsql "database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/resolver"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/tools/common/schema"
)

// The embedded engine's SQLite schema follows the Temporal server durawait
// is built with: a database a durawait built on an older server created is
// brought to the current schema version at start, after a backup; one a
// newer durawait wrote is refused (its schema may hold what this server
// cannot read). The version is recorded in the database's own
// schema_version table, as temporal-sql-tool records it, under one name
// whatever the file's path (schemaDBName): a data dir moved or restored
// elsewhere keeps it.

// schemaDBName is the name under which the database's schema version is
// recorded.
const schemaDBName = "temporal"

// schemaDir is the embedded versioned schema of the SQLite main database
// (go.temporal.io/server/schema: sqlite/v3/temporal/versioned/v0.N).
const schemaDir = "sqlite/v3/temporal"

// BackupSuffix follows the database's name in the name of the copy taken
// before its schema is updated: temporal.db.schema-<its version then>-<time>.
const BackupSuffix = ".schema-"

// ensureSchema records the schema version of a database SetupSchema just
// created (fresh), or brings an existing one to sqliteschema.Version. A
// database with no record (created by a durawait before the record) is
// taken to be at the version this build creates, which every such build
// used (the pinned server has not moved since). An update is preceded by
// a backup of the database beside it.
func ensureSchema(conf *config.SQL, fresh bool, logger *slog.Logger) error {
	admin, err := openAdmin(conf)
	if err != nil {
		return fmt.Errorf("engine: open the database to check its schema: %w", err)
	}
	db := schemaDB{admin: admin}
	defer db.Close()
	current, err := db.ReadSchemaVersion()
	if errors.Is(err, stdsql.ErrNoRows) {
		// Its tables made, its version not written (a kill in between).
		err = errNoRecord
	}
	if !fresh && isMissingTable(err) {
		// No record: a database from before it, unless its schema is gone
		// (damaged: see damaged), which is left as it is.
		if err := db.Exec("SELECT count(*) FROM namespaces"); err != nil {
			return err
		}
	}
	switch {
	case fresh || isMissingTable(err):
		if err := db.CreateSchemaVersionTables(); err != nil && !isTableExists(err) {
			return fmt.Errorf("engine: create the schema version tables: %w", err)
		}
		return db.UpdateSchemaVersion(sqliteschema.Version, sqliteschema.Version)
	case err != nil:
		return fmt.Errorf("engine: read the database's schema version: %w", err)
	}
	switch cmp := compareVersions(current, sqliteschema.Version); {
	case cmp == 0:
		return nil
	case cmp > 0:
		return fmt.Errorf("engine: the database's schema is version %s, newer than this durawait's Temporal server knows (%s): a newer durawait wrote this data dir; run that one, or restore a backup this one wrote",
			current, sqliteschema.Version)
	}
	backup := conf.DatabaseName + BackupSuffix + current + "-" + time.Now().UTC().Format("20060102T150405")
	if err := vacuumInto(conf.DatabaseName, backup); err != nil {
		return fmt.Errorf("engine: back the database up before its schema update: %w", err)
	}
	logger.Info("updating the embedded engine's database schema", "from", current, "to", sqliteschema.Version, "backup", backup)
	task := schema.NewUpdateSchemaTask(db, &schema.UpdateConfig{DBName: schemaDBName, TargetVersion: sqliteschema.Version, SchemaName: schemaDir},
		log.NewNoopLogger())
	if err := task.Run(); err != nil {
		return fmt.Errorf("engine: update the database schema from %s to %s (the database before it is %s): %w", current, sqliteschema.Version, backup, err)
	}
	return nil
}

// openAdmin opens the SQLite database of conf for statements of its own
// (schema, VACUUM), outside the engine's connections.
func openAdmin(conf *config.SQL) (sqlplugin.AdminDB, error) {
	return sql.NewSQLAdminDB(sqlplugin.DbKindUnknown, conf, resolver.NewNoopResolver(), log.NewNoopLogger(), metrics.NoopMetricsHandler)
}

// schemaDB is the database as temporal-sql-tool's update task reads and
// writes it, its version recorded under schemaDBName.
type schemaDB struct{ admin sqlplugin.AdminDB }

var _ schema.DB = schemaDB{}

func (d schemaDB) Exec(stmt string, args ...any) error { return d.admin.Exec(stmt, args...) }
func (d schemaDB) DropAllTables() error {
	return errors.New("engine: durawait never drops the engine's tables")
}
func (d schemaDB) CreateSchemaVersionTables() error   { return d.admin.CreateSchemaVersionTables() }
func (d schemaDB) ReadSchemaVersion() (string, error) { return d.admin.ReadSchemaVersion(schemaDBName) }
func (d schemaDB) UpdateSchemaVersion(version, minCompatible string) error {
	return d.admin.UpdateSchemaVersion(schemaDBName, version, minCompatible)
}
func (d schemaDB) WriteSchemaUpdateLog(oldVersion, newVersion, manifestMD5, desc string) error {
	return d.admin.WriteSchemaUpdateLog(oldVersion, newVersion, manifestMD5, desc)
}
func (d schemaDB) Close()       { _ = d.admin.Close() }
func (d schemaDB) Type() string { return "sql" }

// errNoRecord stands for a schema_version table with no row.
var errNoRecord = errors.New("no such table row: schema_version")

// isMissingTable reports whether err is SQLite's "no such table" (the
// schema_version table of a database created before the record), or a
// table with no record (errNoRecord).
func isMissingTable(err error) bool {
	return errors.Is(err, errNoRecord) || err != nil && strings.Contains(err.Error(), "no such table")
}

// isTableExists reports whether err is SQLite's "table ... already exists".
func isTableExists(err error) bool {
	return err != nil && strings.Contains(err.Error(), "already exists")
}

// compareVersions compares two dotted schema versions ("0.9" < "0.11").
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// DatabaseFile is the embedded engine's database in a data dir.
func DatabaseFile(dataDir string) string { return filepath.Join(dataDir, "temporal.db") }

// vacuumInto writes a consistent copy of the SQLite database file to to
// (SQLite's VACUUM INTO, from a connection of its own): a running engine
// goes on writing meanwhile, and the copy is the database as of one
// transaction, with its write-ahead log folded in. to must not exist.
func vacuumInto(file, to string) error {
	if _, err := os.Stat(to); err == nil {
		return fmt.Errorf("%s already exists", to)
	}
	conf := &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: file,
		ConnectAttributes: map[string]string{"mode": "rw", "journal_mode": "wal", "busy_timeout": "10000"}}
	admin, err := openAdmin(conf)
	if err != nil {
		return fmt.Errorf("open %s: %w", file, err)
	}
	defer admin.Close()
	if err := admin.Exec("VACUUM INTO ?", to); err != nil {
		return fmt.Errorf("copy %s to %s: %w", file, to, err)
	}
	if err := os.Chmod(to, 0o600); err != nil {
		return fmt.Errorf("make %s private (0600): %w", to, err)
	}
	return nil
}

// BackupDatabase writes a consistent copy of the data dir's database to
// to, whether or not an engine runs on it (see vacuumInto).
func BackupDatabase(dataDir, to string) error {
	file := DatabaseFile(dataDir)
	if _, err := os.Stat(file); err != nil {
		return fmt.Errorf("engine: no database in %s: %w", dataDir, err)
	}
	if err := vacuumInto(file, to); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	return nil
}
