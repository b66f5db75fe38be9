package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// HostLockFile is the lock a worker holds on its data dir's host: the data
// dir names the worker's host, and one worker at a time may run a host.
const HostLockFile = "host.lock"

// HostInUseError says that another worker runs the data dir's host.
type HostInUseError struct {
	Dir string
}

func (e *HostInUseError) Error() string {
	return fmt.Sprintf("another durawait worker runs the host of data dir %s (it holds %s): give this worker a data dir (or host.id) of its own",
		e.Dir, filepath.Join(e.Dir, HostLockFile))
}

// AcquireHost takes the data dir's host for this process's worker,
// creating the data dir if needed. The lock is an flock, released by the
// kernel when the process dies.
func AcquireHost(dir string) (*Lock, error) {
	if err := MakePrivate(dir); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, HostLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open host lock file: %w", err)
	}
	if err := lockExclusive(f); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &HostInUseError{Dir: dir}
		}
		return nil, fmt.Errorf("lock the data dir's host: %w", err)
	}
	return &Lock{file: f}, nil
}
