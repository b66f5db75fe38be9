package datadir

import (
	"errors"
	"fmt"
	"os"
)

// MakePrivate creates dir if needed and makes it private to its owner
// (0700), also when it already existed with wider permissions: it holds the
// database, the agents' output and the daemon's log.
func MakePrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("make data dir %s private (0700): %w", dir, err)
	}
	return nil
}

// PrivateFile makes an existing file private to its owner (0600); a file
// that does not exist is no error.
func PrivateFile(path string) error {
	if err := os.Chmod(path, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("make %s private (0600): %w", path, err)
	}
	return nil
}
