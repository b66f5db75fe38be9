package datadir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// LockPath is the lock file of dir, which also records its Owner.
func LockPath(dir string) string { return filepath.Join(dir, "durawait.lock") }

// LogPath is where the background daemon of dir writes its log.
func LogPath(dir string) string { return filepath.Join(dir, "durawait.log") }

// Inspect reports whether a live process holds dir and, if so, its owner
// record. It takes the lock shared for an instant to find out, so it must
// not race a process starting on dir; callers that may race hold SpawnLock.
func Inspect(dir string) (Owner, bool, error) {
	f, err := os.Open(LockPath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return Owner{}, false, nil
	}
	if err != nil {
		return Owner{}, false, fmt.Errorf("open lock file: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return Owner{}, false, nil
	} else if !errors.Is(err, syscall.EWOULDBLOCK) {
		return Owner{}, false, fmt.Errorf("inspect lock file: %w", err)
	}
	var o Owner
	if err := json.NewDecoder(f).Decode(&o); err != nil {
		// The owner has the lock but has not written its record yet.
		return Owner{}, true, nil
	}
	return o, true, nil
}

// ReadOwner reads the owner record without looking at the lock: the record
// of a dead owner stays behind, so the caller checks that it is alive.
func ReadOwner(dir string) (Owner, error) {
	b, err := os.ReadFile(LockPath(dir))
	if err != nil {
		return Owner{}, fmt.Errorf("read lock file: %w", err)
	}
	var o Owner
	if err := json.Unmarshal(b, &o); err != nil {
		return Owner{}, fmt.Errorf("read lock file %s: %w", LockPath(dir), err)
	}
	return o, nil
}

// SpawnLock serializes the processes that may start a daemon on dir: it
// takes <dir>/spawn.lock exclusively, polling until ctx ends, and returns
// the function that releases it.
func SpawnLock(ctx context.Context, dir string) (func(), error) {
	if err := MakePrivate(dir); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "spawn.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open spawn lock: %w", err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("take spawn lock: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("take spawn lock of %s: %w", dir, ctx.Err())
		case <-tick.C:
		}
	}
}
