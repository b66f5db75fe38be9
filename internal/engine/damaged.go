package engine

import (
	"fmt"
	"strings"
)

// DamagedDatabaseError says that the engine's SQLite database cannot be
// used as it is on disk, names its files and says what to do.
type DamagedDatabaseError struct {
	// File is the database file (temporal.db); its write-ahead log is
	// File+"-wal" and its shared memory File+"-shm".
	File string
	Err  error
}

func (e *DamagedDatabaseError) Error() string {
	return fmt.Sprintf("engine: the database %s is damaged or incomplete (%v). Its write-ahead log %s-wal may be corrupt, "+
		"or the database was copied without it. Stop every durawait on this data dir; then restore %s and %s-wal together "+
		"from a backup, or move %s, %s-wal and %s-shm aside to start with an empty database (the waits they hold are lost)",
		e.File, e.Err, e.File, e.File, e.File, e.File, e.File, e.File)
}

func (e *DamagedDatabaseError) Unwrap() error { return e.Err }

// damaged wraps err as a *DamagedDatabaseError when SQLite says the
// database is not what it should be: tables missing (the schema lived in a
// lost or corrupt WAL), a malformed image, or not a database at all.
func damaged(file string, err error) error {
	if err == nil {
		return nil
	}
	m := strings.ToLower(err.Error())
	for _, sign := range []string{"no such table", "malformed", "not a database", "file is encrypted", "disk image", "corrupt"} {
		if strings.Contains(m, sign) {
			return &DamagedDatabaseError{File: file, Err: err}
		}
	}
	return err
}
