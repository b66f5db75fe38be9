package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/workflows"
)

// backupCommand is `durawait backup --to DIR`: a consistent copy of a data
// dir, running or not (docs/operations.md, "Backup and restore").
func backupCommand(fs *flag.FlagSet) action {
	flags := registerConfigFlags(fs)
	to := fs.String("to", "", "the folder to write the copy to (it must not exist)")
	return func(_ context.Context, inv invocation) error {
		if *to == "" {
			return usageErrorf("--to: name the folder to write the copy to (it must not exist)")
		}
		cfg, err := flags.load()
		if err != nil {
			return err
		}
		return runBackup(cfg, *to, inv.stdout)
	}
}

// notCopied are the entries of a data dir a backup leaves out: the
// database (copied whole by backupDatabase), its write-ahead log and
// shared memory (folded into the copy), the locks of the process that owns
// it, and the databases a schema update set aside.
func notCopied(name string) bool {
	switch name {
	case "temporal.db", "temporal.db-wal", "temporal.db-shm", "durawait.lock", "host.lock":
		return true
	}
	return strings.HasPrefix(name, "temporal.db.schema-") || strings.HasSuffix(name, ".tmp")
}

// runBackup copies cfg's data dir to to: the engine's database as of one
// transaction (whether or not durawait runs on it), then every other file
// (the engine's certificates, the hosts' loop journals and ends, the agent
// spools), each as it is when it is read.
func runBackup(cfg config.Config, to string, stdout io.Writer) error {
	from := cfg.DataDir
	if _, err := os.Stat(filepath.Join(from, "temporal.db")); err != nil {
		return fmt.Errorf("backup: %s has no engine database (temporal.db): only the data dir of durawait serve's embedded engine is backed up here; a cluster's Temporal has its own backups", from)
	}
	if _, err := os.Stat(to); err == nil {
		return fmt.Errorf("backup: --to %s already exists: name a new folder", to)
	}
	if absTo, err := filepath.Abs(to); err == nil && workflows.InsideRoot(absTo, mustAbs(from)) {
		return fmt.Errorf("backup: --to %s is inside the data dir %s: name a folder outside it", to, from)
	}
	if err := os.MkdirAll(to, 0o700); err != nil {
		return fmt.Errorf("backup: make %s: %w", to, err)
	}
	files, err := backupInto(from, to)
	if err != nil {
		_ = os.RemoveAll(to) // no half backup left to be taken for a whole one
		return fmt.Errorf("backup: %w (nothing was left in %s)", err, to)
	}
	fmt.Fprintf(stdout, "backed up %s to %s: the engine's database and %d other files\n", from, to, files)
	fmt.Fprintf(stdout, "to restore: stop durawait, put %s in place of %s (or point data_dir at it), start durawait\n", to, from)
	return nil
}

// backupInto copies the data dir from into the folder to: the database,
// then the rest (copyTree).
func backupInto(from, to string) (int, error) {
	if err := backupDatabase(from, filepath.Join(to, "temporal.db")); err != nil {
		return 0, err
	}
	return copyTree(from, to)
}

// mustAbs is dir made absolute (as it is when it cannot be).
func mustAbs(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// copyTree copies the regular files and folders under from (but those
// notCopied at its top) to to, keeping their permissions, and reports how
// many files it copied. A file removed while it runs (a loop's journal
// entry that ended) is skipped.
func copyTree(from, to string) (int, error) {
	files := 0
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil || rel == "." {
			return err
		}
		if !strings.Contains(rel, string(filepath.Separator)) && notCopied(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, info.Mode().Perm())
		case info.Mode().IsRegular():
			if err := copyFile(path, dst, info.Mode().Perm()); err != nil {
				return err
			}
			files++
		}
		return nil // sockets, pipes, links: not data
	})
	return files, err
}

// copyFile copies one file; one removed meanwhile is no error.
func copyFile(from, to string, perm fs.FileMode) error {
	src, err := os.Open(from)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return fmt.Errorf("copy %s: %w", from, err)
	}
	return dst.Close()
}
